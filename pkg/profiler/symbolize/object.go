package symbolize

import (
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/weftdev/weft/pkg/goexec"
)

// segment is an ELF PT_LOAD program header: how file offsets map to
// virtual addresses.
type segment struct {
	off, vaddr, filesz uint64
	exec               bool
}

// object is what one ELF file contributes to symbolisation. It is parsed
// once and shared by every process that maps the file.
type object struct {
	segs  []segment
	syms  symTable
	gotab *gosym.Table // nil unless a Go binary
	id    fileID       // of the file parsed; zero for the vDSO
}

// fileID tells apart two files that had the same device and inode: a
// deleted binary's inode is soon reused, often by its own replacement.
type fileID struct {
	size  int64
	mtime int64 // ns
}

func idOf(fi os.FileInfo) fileID {
	return fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// statFirst returns the id of the first path that can be stat'ed.
func statFirst(paths []string) (fileID, bool) {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			return idOf(fi), true
		}
	}
	return fileID{}, false
}

// openBinary parses the first path that can be read as ELF.
func openBinary(paths []string) (*object, error) {
	var errs []error
	for _, p := range paths {
		b, err := readBinary(p)
		if err == nil {
			return b, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("no path to read the binary through")
	}
	return nil, errors.Join(errs...)
}

func readBinary(path string) (*object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat binary: %w", err)
	}
	b, err := parseBinary(f, path)
	if err != nil {
		return nil, err
	}
	b.id = idOf(fi)
	return b, nil
}

func parseBinary(r io.ReaderAt, name string) (b *object, err error) {
	// debug/elf and debug/gosym trust their input; a corrupt or truncated
	// file must cost one binary's names, not the agent.
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("parse %s: %v", name, p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}

	b = &object{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			b.segs = append(b.segs, segment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz, exec: p.Flags&elf.PF_X != 0})
		}
	}
	raw := elfSymbols(f)
	b.syms = funcSymbols(raw)
	// A Go table that fails to parse leaves the ELF symbols, if any.
	b.gotab, _ = goexec.FuncTable(f, raw)
	return b, nil
}

// vaddr translates a file offset into the virtual address the binary was
// linked for. Going through the program headers is what makes this right
// for PIE and non-PIE executables and shared libraries alike: the load
// base never enters into it.
func (b *object) vaddr(off uint64) (uint64, bool) {
	for _, execOnly := range []bool{true, false} {
		for _, s := range b.segs {
			if execOnly && !s.exec {
				continue
			}
			if off >= s.off && off < s.off+s.filesz {
				return off - s.off + s.vaddr, true
			}
		}
	}
	return 0, false
}

// lookup names the code at the virtual address pc. The Go table comes
// first as it also knows the source line; the ELF symbols cover what it
// does not, such as C code in cgo binaries.
func (b *object) lookup(pc uint64) (fn, file string, line int) {
	defer func() {
		if recover() != nil {
			fn, file, line = "", "", 0
		}
	}()
	if b.gotab != nil {
		if file, line, f := b.gotab.PCToLine(pc); f != nil {
			return f.Name, file, line
		}
	}
	if s, ok := b.syms.lookup(pc); ok {
		return s.name, "", 0
	}
	return "", "", 0
}
