# weft — see README.md. `make test` is what CI runs.
GO        ?= go
BIN       := bin/weft
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
FUZZTIME  ?= 20s

.PHONY: all deps generate check-generated build test test-unit test-privileged fuzz bench demo lint clean

all: build

deps:
	@scripts/deps.sh

generate: deps
	$(GO) generate ./pkg/tracer/

check-generated: deps
	@scripts/check-generated.sh

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/weft

lint:
	@out=$$(gofmt -l cmd pkg test); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Everything, as CI runs it (root: the privileged tests load BPF and drive
# real traffic; with WEFT_REQUIRE_PRIVILEGED=1 they fail rather than skip).
test: deps check-generated lint build
	$(GO) test -count=1 -timeout 40m ./...
	$(GO) test -count=1 -run '^$$' -fuzz FuzzParser -fuzztime $(FUZZTIME) ./pkg/httpparse/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 10m ./pkg/httpparse/

bench: deps build
	scripts/bench.sh

demo: deps build
	scripts/demo.sh

clean:
	rm -rf bin
