#!/usr/bin/env bash
# The local demo, no Docker needed: Jaeger, the demo services (the Kotlin
# frontend with weft's Java agent and without it, the plain-Java jfront, the
# backend) and weft on 127.0.0.1, a little traffic through every endpoint,
# then each endpoint's trace as Jaeger's query API returns it, with the flame
# graph of its slowest span. demo/runner does the work (its package comment
# lists the ports); its files go to .cache/demo/.
#
#   scripts/demo.sh          runs until Ctrl-C, which stops everything (make demo)
#   scripts/demo.sh -check   asserts the trace shapes, stops, exits 0 or 1 (make demo-test)
#
# Other flags: -port-base N (or WEFT_DEMO_PORT_BASE), -requests N, -java PATH,
# -weft PATH, -no-build, -v.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: weft loads BPF programs; run as root (sudo make demo)" >&2
	exit 1
fi
mkdir -p .cache/bin
go build -o .cache/bin/demo-runner ./demo/runner
# exec: Ctrl-C and SIGTERM reach the runner itself, which stops what it started.
exec .cache/bin/demo-runner "$@"
