// Package floor loads the benchmark's do-nothing sockmap programs
// (bpf/bench_floor.bpf.c): the kernel's part of what injection costs.
package floor

// Generated and committed like pkg/tracer's objects; `make generate`
// regenerates them and `make test` checks them.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86" -target amd64 floor ../../../bpf/bench_floor.bpf.c -- -I../../../bpf/include
