#!/usr/bin/env bash
# Runs the overhead benchmark (see docs/benchmarks.md) as root.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./test/bench "$@"
