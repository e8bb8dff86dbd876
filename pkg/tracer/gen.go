package tracer

// The BPF objects are generated from bpf/ and committed, so that building
// weft needs no clang. `make generate` regenerates them; `make test` checks
// that they match the sources.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86" -target amd64 -type event_header -type span_ctx -type stack_sample -type weft_stat -type weft_event_kind -type weft_direction -type weft_ctx_kind -type weft_proc_mode -type weft_capture -type proc_info -type set_mode_args tp ../../bpf/tracer_tp.bpf.c -- -I../../bpf/include
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86" -target amd64 -type event_header -type stack_sample kprobe ../../bpf/tracer_kprobe.bpf.c -- -I../../bpf/include
