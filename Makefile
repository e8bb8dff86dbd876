# weft — see README.md. `make test` is what CI runs.
GO        ?= go
BIN       := bin/weft
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
FUZZTIME  ?= 20s
# The agent is tested on both JDKs the project supports; `java` is JDK 17.
JDK25     ?= /usr/lib/jvm/temurin-25-jdk-amd64

.PHONY: all deps generate check-generated build java test-java test-deploy test fuzz bench demo demo-test lint clean

all: build

deps:
	@scripts/deps.sh

generate: deps
	$(GO) generate ./pkg/tracer/ ./test/bench/floor/

check-generated: deps
	@scripts/check-generated.sh
	@scripts/check-agent-jar.sh

# The Java agent (pkg/javaagent/weft-agent.jar, embedded in weft) and the
# demo services; both scripts do nothing when their outputs are up to date.
java:
	@scripts/build-agent.sh
	@scripts/build-demo.sh

# The agent's own tests (javaagent/src/test), on JDK 17 and JDK 25.
test-java:
	mvn -q -B -f javaagent/pom.xml verify
	JAVA_HOME=$(JDK25) mvn -q -B -f javaagent/pom.xml verify

# The deployment files (compose, Kubernetes, systemd), validated offline;
# a module of its own so that its validators stay out of weft's go.mod.
test-deploy:
	cd test/deploy && $(GO) vet ./... && $(GO) test -count=1 ./...

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/weft

lint:
	@out=$$(gofmt -l cmd pkg test demo); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Everything, as CI runs it (root: the privileged tests load BPF and drive
# real traffic; with WEFT_REQUIRE_PRIVILEGED=1 they fail rather than skip).
# scripts/go-test.sh runs test/e2e in two halves beside the other packages.
# The timeout catches a hang, not a slow machine: test/e2e whole took
# 2368 s of a fresh-clone run on 2026-12-06 and 2779 s on 2026-12-07.
test: deps check-generated lint build java test-java test-deploy
	GO=$(GO) scripts/go-test.sh -count=1 -timeout 60m
	$(GO) test -count=1 -run '^$$' -fuzz FuzzParser -fuzztime $(FUZZTIME) ./pkg/httpparse/
	$(GO) test -count=1 -run '^$$' -fuzz FuzzParser -fuzztime $(FUZZTIME) ./pkg/httpparse/h2/
	$(MAKE) demo-test

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 10m ./pkg/httpparse/
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 10m ./pkg/httpparse/h2/

bench: deps build
	scripts/bench.sh

# The local demo, no Docker (scripts/demo.sh runs demo/runner): builds the
# agent, the demo services and a pinned Jaeger when missing, starts them and
# weft on 127.0.0.1:19480-19489 (WEFT_DEMO_PORT_BASE moves them), prints each
# endpoint's trace from Jaeger with its flame graph, runs until Ctrl-C (root).
demo: deps build
	scripts/demo.sh

# The same demo headless: asserts every endpoint's trace shape, with and
# without the agent, and a /cpu span's flame graph through Jaeger's API (root).
demo-test: deps build
	scripts/demo.sh -check

clean:
	rm -rf bin
