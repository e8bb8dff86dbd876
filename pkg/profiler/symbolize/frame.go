package symbolize

import (
	"fmt"
	"path"
	"strings"
)

// Kind says where a frame's code lives.
type Kind uint8

const (
	KindUser   Kind = iota // native or Go code mapped from a file, or unknown user code
	KindKernel             // kernel or kernel module code
	KindJIT                // code a runtime generated, named by its perf map
)

func (k Kind) String() string {
	switch k {
	case KindKernel:
		return "kernel"
	case KindJIT:
		return "jit"
	default:
		return "user"
	}
}

// Module names used for frames that are not backed by a file.
const (
	ModuleKernel = "[kernel]"
	ModuleAnon   = "[anon]" // anonymous executable memory, such as a JIT code cache
)

// Frame is one symbolised stack frame.
type Frame struct {
	Kind Kind
	// Address is the instruction pointer as sampled.
	Address uint64
	// Function is the symbol name; empty when it could not be resolved.
	Function string
	// File and Line locate the code in its source (Go binaries). For a
	// kernel module symbol File holds the module as "[name]".
	File string
	Line int
	// Module is the mapping the address fell in: the path of the binary
	// as the process sees it, ModuleKernel, ModuleAnon, a special mapping
	// such as "[vdso]", or empty when the process's mappings are unknown.
	Module string
	// Offset is the address relative to Module: the ELF virtual address
	// when the binary could be read, else the file offset. It is stable
	// across processes and address-space layouts, unlike Address.
	Offset uint64
}

// Resolved reports whether the frame has a function name.
func (f Frame) Resolved() bool { return f.Function != "" }

// Name is the frame's display name: the function when known, otherwise
// something that still says where the code was, such as "libfoo.so+0x1234",
// "[anon] 0x7f12…" or "[kernel] unknown".
func (f Frame) Name() string {
	switch {
	case f.Function != "":
		return f.Function
	case f.Kind == KindKernel:
		// Hidden kernel addresses would each make their own frame; one
		// name merges them.
		return "[kernel] unknown"
	case f.Module == "":
		return fmt.Sprintf("[unknown] %#x", f.Address)
	case strings.HasPrefix(f.Module, "["):
		return fmt.Sprintf("%s %#x", f.Module, f.Address)
	default:
		return fmt.Sprintf("%s+%#x", path.Base(f.Module), f.Offset)
	}
}
