// Package symbolize turns the raw instruction pointers of a sampled stack
// into function names: kernel frames from /proc/kallsyms, native and Go
// frames from the ELF files a process maps, and JIT frames from the
// /tmp/perf-<pid>.map files that JVMs (and other runtimes) write.
//
// It never fails a whole stack: a frame it cannot name keeps its address
// and the mapping it fell in, so profiles stay complete when binaries are
// stripped or gone and processes have exited.
//
// Everything is read through /proc/<pid>/root so processes in containers
// resolve against their own files. Binaries are parsed once and shared by
// every process that maps them; all caches are bounded.
package symbolize
