#!/usr/bin/env bash
# The overhead benchmark of docs/benchmarks.md, as root: the same Go HTTP
# server with weft off and on, alternating, first at a fixed request rate
# (open loop), then at saturation (wrk, closed loop).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "## Fixed load: 3000 requests/s for 15 s per run, 3 off/on pairs"
echo
go run ./test/bench -rate 3000 "$@"
echo
echo "## Saturation: wrk, 1 thread, 32 connections, 15 s per run, 3 off/on pairs"
echo
go run ./test/bench "$@"
echo
echo "## Propagation: a two-service chain at 1500 requests/s, weft off / on without injection / on"
echo
go run ./test/bench -chain -rate 1500 -modes off,noprop,on "$@"
