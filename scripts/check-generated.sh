#!/usr/bin/env bash
# Regenerates the BPF objects and Go bindings and fails when they differ
# from what is in the tree: the committed .o/.go must match bpf/ sources.
set -euo pipefail
cd "$(dirname "$0")/.."
files=(pkg/tracer/*_bpfel.go pkg/tracer/*_bpfel.o)
before=$(sha256sum "${files[@]}")
go generate ./pkg/tracer/ >/dev/null
after=$(sha256sum pkg/tracer/*_bpfel.go pkg/tracer/*_bpfel.o)
if [ "$before" != "$after" ]; then
	echo "generated BPF files were out of date with bpf/ sources (now regenerated):" >&2
	diff <(echo "$before") <(echo "$after") >&2 || true
	exit 1
fi
echo "generated BPF files match their sources"
