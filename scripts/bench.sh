#!/usr/bin/env bash
# The overhead benchmark of docs/benchmarks.md, as root: the same Go HTTP
# server with weft off and on, alternating, first at a fixed request rate
# (open loop), then at saturation (wrk, closed loop).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "## What weft costs a process it does not trace: 1-byte write(2)s, weft off / on / on the syscall-tracepoint path"
echo
go run ./test/bench -untraced-write -rounds 8 -modes off,on,syscalls
echo
echo "## Start-up: exec to ready (programs verified and attached, one Go server set up)"
echo
go run ./test/bench -startup -rounds 10 -modes on "$@"
echo
echo "## Fixed load: 3000 requests/s for 15 s per run, 5 rounds of off / the syscall-tracepoint path / on"
echo
go run ./test/bench -rate 3000 -rounds 5 -modes off,syscalls,on "$@"
echo
echo "## Saturation: wrk, 1 thread, 32 connections, 15 s per run, 5 rounds of off / syscalls / on"
echo
go run ./test/bench -rounds 5 -modes off,syscalls,on "$@"
echo
echo "## Sampling: weft's CPU per request at 3000 requests/s, every trace sampled / traceidratio 0.1 / none"
echo
go run ./test/bench -rate 3000 -rounds 6 -duration 10s -modes on,ratio0.1,ratio0 "$@"
echo
echo "## Span metrics: weft's CPU per request at 3000 requests/s, metrics off / on"
echo
go run ./test/bench -rate 3000 -rounds 5 -duration 8s -modes on,metrics "$@"
echo
echo "## Span metrics: ns per span and memory of 1,000 services x 100 routes"
echo
go test -run '^$' -bench . -count 5 ./pkg/spanmetrics
echo
echo "## HTTP/2 and gRPC: CPU per gRPC call, grpc-go client and server, 1000 unary calls/s, weft off / on"
echo
go run ./test/bench -grpc -rate 1000 -rounds 6 -duration 15s -modes off,on "$@"
echo
echo "## HTTP/2: CPU per request, net/http client and h2c server, 1000 GETs/s with a traceparent, weft off / on"
echo
go run ./test/bench -h2 -rate 1000 -rounds 6 -duration 15s -modes off,on "$@"
echo
echo "## TLS: CPU per HTTPS request, nginx (TLS, HTTPS/1.1 and HTTP/2) in front of a Go backend, a Go HTTPS server and a Node.js HTTPS server, 1000 requests/s, weft off / with --tls=off / on"
echo
go run ./test/bench -tls -tls-servers nginx,nginx-h2,go,node -rate 1000 -rounds 6 -duration 15s -modes off,notls,on "$@"
echo
echo "## Right parents: a Go net/http chain at 1000 requests/s, off / on without runtime hooks / on"
echo
go run ./test/bench -go-chain -rate 1000 -rounds 6 -modes off,nohooks,on "$@"
echo
echo "## Right parents: what one goroutine creation costs a traced Go program, runtime hooks off / on"
echo
go run ./test/bench -goroutine-cost -rounds 6 -modes nohooks,on "$@"
echo
echo "## Right parents: a Node.js chain at 1000 requests/s, weft off / on (the companion loaded in both)"
echo
go run ./test/bench -node-chain -rate 1000 -rounds 6 -modes off,on "$@"
echo
echo "## Propagation: a two-service chain at 1500 requests/s, weft off / on without injection / on"
echo
go run ./test/bench -chain -rate 1500 -rounds 5 -modes off,noprop,on "$@"
echo
echo "## Propagation, the front keeping its backend connections alive"
echo
go run ./test/bench -chain -chain-keepalive -rate 1500 -rounds 5 -modes off,noprop,on "$@"
echo
echo "## Propagation: the sender's CPU per request, pinned CPUs (floor: the kernel's sockmap path with a do-nothing program)"
echo
go run ./test/bench -send-cost -rounds 6 -modes off,floor,noprop,on
echo
go run ./test/bench -send-cost -send-new-conn -send-requests 10000 -rounds 5 -modes off,floor,noprop,on
echo
echo "## JVM agent: Ktor /direct, weft alone / weft + agent / OpenTelemetry Java agent, 150 requests/s"
echo
scripts/build-agent.sh
scripts/build-demo.sh
if [ ! -f .cache/opentelemetry-javaagent.jar ]; then
	mkdir -p .cache
	mvn -q -B dependency:copy -Dartifact=io.opentelemetry.javaagent:opentelemetry-javaagent:2.31.0 \
		-DoutputDirectory=.cache -Dmdep.stripVersion=true
fi
go run ./test/bench -jvm -rate 150 -duration 20s -jvm-warmup 70s -rounds 2
echo
echo "## JVM agent: Spring WebFlux calling through OkHttp's enqueue, weft alone / weft + agent / OpenTelemetry Java agent, 400 requests/s"
echo
# One fixed, pre-touched heap in every configuration, so heap sizing is not one of the differences between runs.
go run ./test/bench -jvm -jvm-app spring-webflux -jvm-modes weft,weft+agent,otel -rate 400 -duration 30s -jvm-warmup 60s -rounds 6 \
	-jvm-opts "-Xms1g -Xmx1g -XX:+AlwaysPreTouch"
echo
echo "## Profiling: a CPU-bound traced service (/burn?ms=5) keeping both cores busy; weft on, then profiling at 19 and 99 Hz"
echo
go run ./test/bench -path '/burn?ms=5' -connections 8 -modes on,prof19,prof99 -rounds 8 -duration 10s
echo
echo "## Profiling under request load: wrk on /hello; weft on, then profiling at 19 and 99 Hz"
echo
go run ./test/bench -modes on,prof19,prof99 "$@"
