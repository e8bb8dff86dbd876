#!/usr/bin/env bash
# Regenerates the BPF objects and Go bindings and fails when they differ
# from what is in the tree: the committed .o/.go must match bpf/ sources.
set -euo pipefail
cd "$(dirname "$0")/.."
generated() { sha256sum pkg/tracer/*_bpfel.{go,o} test/bench/floor/*_bpfel.{go,o}; }
before=$(generated)
go generate ./pkg/tracer/ ./test/bench/floor/ >/dev/null
after=$(generated)
if [ "$before" != "$after" ]; then
	echo "generated BPF files were out of date with bpf/ sources (now regenerated):" >&2
	diff <(echo "$before") <(echo "$after") >&2 || true
	exit 1
fi
echo "generated BPF files match their sources"
