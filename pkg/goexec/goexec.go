// Package goexec reads what weft's goroutine hooks need from a Go
// executable: its Go version, and where the functions it probes start and
// return, as file offsets for uprobes. Functions come from the ELF symbols
// or, in binaries linked with -s -w, from the Go function table; no struct
// layout is read, so no per-version offset table is needed.
package goexec

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/weftdev/weft/pkg/probesite"
)

// ErrNotGo: the file is not a Go executable.
var ErrNotGo = errors.New("not a Go executable")

// The functions weft probes.
const (
	// NewProc1 creates every goroutine: a child inherits its creator's
	// request. Probed at entry (the creator) and at each return (the new g).
	NewProc1 = "runtime.newproc1"
	// RoundTrip runs on the caller's goroutine once a connection is chosen.
	RoundTrip = "net/http.(*persistConn).roundTrip"
	// WriteLoop is the goroutine that writes a client connection's requests.
	WriteLoop = "net/http.(*persistConn).writeLoop"
	// H2WriteHeaders, XH2WriteHeaders: net/http's bundled HTTP/2 client
	// and x/net/http2's write a stream's HEADERS on its request's own
	// goroutine and flush them (streamID in RBX).
	H2WriteHeaders  = "net/http.(*http2ClientConn).writeHeaders"
	XH2WriteHeaders = "golang.org/x/net/http2.(*ClientConn).writeHeaders"
	// GRPCNewStream opens a grpc-go client stream on the caller's
	// goroutine and hands its header item to the connection's loopy
	// writer through executeAndPut (the item's data word in RDI), probed
	// at that call; the loopy takes the item to write the stream's
	// HEADERS in GRPCClientHeaders (the item in RBX; grpc-go 1.85) or, in
	// older releases, GRPCOriginateStream (in RCX; 1.81 and before).
	GRPCNewStream       = "google.golang.org/grpc/internal/transport.(*http2Client).NewStream"
	GRPCClientHeaders   = "google.golang.org/grpc/internal/transport.(*loopyWriter).clientHeaderHandler"
	GRPCOriginateStream = "google.golang.org/grpc/internal/transport.(*loopyWriter).originateStream"
	grpcExecuteAndPut   = "google.golang.org/grpc/internal/transport.(*controlBuffer).executeAndPut"
	// GRPCServeHeaders decodes a grpc-go server stream's HEADERS on the
	// connection's reader goroutine and starts the stream's handler
	// goroutine (the frame in RDI); GRPCServeStatus runs on the handler's
	// goroutine once the handler returned. Found together only in the
	// grpc-go releases whose streams are ServerStreams (1.6x and later):
	// before, writeStatus was WriteStatus and operateHeaders took the
	// frame first.
	GRPCServeHeaders = "google.golang.org/grpc/internal/transport.(*http2Server).operateHeaders"
	GRPCServeStatus  = "google.golang.org/grpc/internal/transport.(*http2Server).writeStatus"
	// H2ServeRequest makes a stream's request of its HEADERS on the
	// serve goroutine of net/http's HTTP/2 server connection (sc, the
	// *stream and the frame in RAX, RBX, RCX), for each stream a client
	// opens; H2ServeHandler runs the stream's handler on a goroutine of
	// its own (sc in RAX, the *responseWriter in RBX); H2ServeDone runs on
	// that goroutine once the handler returned. The same since Go 1.7, and
	// in x/net/http2 (the X names).
	H2ServeRequest  = "net/http.(*http2serverConn).newWriterAndRequest"
	H2ServeHandler  = "net/http.(*http2serverConn).runHandler"
	H2ServeDone     = "net/http.(*http2responseWriter).handlerDone"
	XH2ServeRequest = "golang.org/x/net/http2.(*serverConn).newWriterAndRequest"
	XH2ServeHandler = "golang.org/x/net/http2.(*serverConn).runHandler"
	XH2ServeDone    = "golang.org/x/net/http2.(*responseWriter).handlerDone"
	// casgstatus is called by newproc1 to make the new goroutine runnable.
	casgstatus = "runtime.casgstatus"
	// TLSRead, TLSWrite: crypto/tls's plaintext. Read is probed at its
	// call of memmove, which copies the plaintext into the caller's
	// buffer (bytes.Reader's Read inlined), the connection read from its
	// stack slot (Func.RecvSlot); Write at its calls of
	// tlsWriteRecord, to which it hands the plaintext once the handshake
	// is over. Calls, not RETs: uprobes emulate a CALL (one trap) but
	// single-step a RET (two).
	TLSRead        = "crypto/tls.(*Conn).Read"
	TLSWrite       = "crypto/tls.(*Conn).Write"
	memmove        = "runtime.memmove"
	tlsWriteRecord = "crypto/tls.(*Conn).writeRecordLocked"
	// TLSClientHandshake, TLSServerHandshake move ciphertext only; their
	// socket calls name the connection's socket before the first write.
	// (Not handshakeContext, which every Read and Write call: two more
	// traps per call.)
	TLSClientHandshake = "crypto/tls.(*Conn).clientHandshake"
	TLSServerHandshake = "crypto/tls.(*Conn).serverHandshake"
)

// h2Funcs are the HTTP/2 clients' writeHeaders a binary may link.
var h2Funcs = []string{H2WriteHeaders, XH2WriteHeaders}

// H2Server is one HTTP/2 server's functions that hand a stream's span
// to its handler.
type H2Server struct{ Request, Handler, Done string }

// h2Servers are the HTTP/2 servers a binary may link.
var h2Servers = []H2Server{{H2ServeRequest, H2ServeHandler, H2ServeDone}, {XH2ServeRequest, XH2ServeHandler, XH2ServeDone}}

// tlsFuncs are crypto/tls's probed functions: the read and write, and
// whichever handshakes the program links (a client only has its own).
var tlsFuncs = []string{TLSRead, TLSWrite, TLSClientHandshake, TLSServerHandshake}

// tlsHandshakes are probed at their RETs too.
var tlsHandshakes = []string{TLSClientHandshake, TLSServerHandshake}

// Func is a probed function, by file offsets: its entry, where its
// arguments can be read at the least cost (Probe), each RET, and each
// call to the function weft reads its arguments at (Calls: casgstatus
// in newproc1, executeAndPut in grpc-go's NewStream).
type Func struct {
	Entry uint64
	// Probe is the first conditional jump of the stack check when nothing
	// before it writes an argument register: uprobes emulate a jump (one
	// trap) but single-step most other instructions (two traps).
	Probe   uint64
	Returns []uint64
	Calls   []uint64
	// NewG (newproc1, before Go 1.24): the first instruction uprobes
	// emulate after the new g's goid is stored through RAX, with RAX
	// still the new g; 0 if there is none, and then each RET, which
	// uprobes single-step, stands for it.
	NewG uint64
	// RecvSlot (crypto/tls Read): where the receiver stays on the stack
	// through the body's calls, as an offset from RSP there; 0 if unknown.
	RecvSlot int64
}

// NewProcHook is where newproc1 is probed for the new goroutine.
type NewProcHook int

const (
	// HookCasg: each call to casgstatus (the new g in RAX, the old status
	// in RBX), where its goid and parentGoid are already set (Go 1.24+). A
	// call is emulated: one trap per goroutine created.
	HookCasg NewProcHook = iota
	// HookReturn: each RET (the new g in RAX), for Go 1.21-1.23, which set
	// the goid after that call.
	HookReturn
	// HookEntryReturn: the entry too, for the creator's g (RBX), before
	// Go 1.21 recorded parentGoid.
	HookEntryReturn
)

// Binary is what weft knows of one Go executable.
type Binary struct {
	GoVersion string // "go1.26.8"
	Arch      string // GOARCH
	Funcs     map[string]Func
	Stripped  bool // functions found through the Go table, not ELF symbols
	G         GOffsets
	gErr      error // why G is unknown
}

// NewProc says how runtime.newproc1 is to be probed in this Go.
func (b *Binary) NewProc() NewProcHook {
	switch {
	case b.G.ParentGoid == 0:
		return HookEntryReturn
	case atLeast(b.GoVersion, 1, 24):
		return HookCasg
	}
	return HookReturn
}

// NetHTTPClient reports whether the binary has net/http's client
// transport, whose writes leave from a goroutine of their own.
func (b *Binary) NetHTTPClient() bool {
	_, rt := b.Funcs[RoundTrip]
	_, wl := b.Funcs[WriteLoop]
	return rt || wl
}

// H2Clients are the HTTP/2 clients' writeHeaders functions the binary
// links.
func (b *Binary) H2Clients() []string {
	var out []string
	for _, name := range h2Funcs {
		if _, ok := b.Funcs[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// GRPCLoopyTake is the function where grpc-go's loopy writer takes a
// client stream's header item, as a register of the item: RBX in
// clientHeaderHandler, RCX in originateStream.
type GRPCLoopyTake struct {
	Func  string
	InRCX bool
}

// GRPCClient says where to probe grpc-go's client transport: NewStream
// with its call of executeAndPut, and where the loopy writer takes the
// item; false when the binary has no such pair.
func (b *Binary) GRPCClient() (GRPCLoopyTake, bool) {
	if len(b.Funcs[GRPCNewStream].Calls) == 0 {
		return GRPCLoopyTake{}, false
	}
	if _, ok := b.Funcs[GRPCClientHeaders]; ok {
		return GRPCLoopyTake{Func: GRPCClientHeaders}, true
	}
	if _, ok := b.Funcs[GRPCOriginateStream]; ok {
		return GRPCLoopyTake{Func: GRPCOriginateStream, InRCX: true}, true
	}
	return GRPCLoopyTake{}, false
}

// H2Servers are the HTTP/2 servers the binary links with all three
// functions.
func (b *Binary) H2Servers() []H2Server {
	var out []H2Server
	for _, srv := range h2Servers {
		_, req := b.Funcs[srv.Request]
		_, handler := b.Funcs[srv.Handler]
		_, done := b.Funcs[srv.Done]
		if req && handler && done {
			out = append(out, srv)
		}
	}
	return out
}

// GRPCServer reports whether the binary has grpc-go's server transport:
// where it decodes a stream's HEADERS and where a handler's status goes.
func (b *Binary) GRPCServer() bool {
	_, headers := b.Funcs[GRPCServeHeaders]
	_, status := b.Funcs[GRPCServeStatus]
	return headers && status
}

// CryptoTLS reports whether the binary has crypto/tls's connection read
// with its copy and its receiver's stack slot, write with its record
// calls, and a handshake with its return instructions.
func (b *Binary) CryptoTLS() bool {
	_, copies := b.TLSReadCopy()
	return copies && b.Funcs[TLSRead].RecvSlot != 0 && len(b.Funcs[TLSWrite].Calls) > 0 &&
		len(b.TLSHandshakes()) > 0
}

// TLSHandshakes are the crypto/tls handshakes the binary links, each
// with its return instructions (a client has only its own).
func (b *Binary) TLSHandshakes() []Func {
	var out []Func
	for _, name := range tlsHandshakes {
		if fn, ok := b.Funcs[name]; ok && len(fn.Returns) > 0 {
			out = append(out, fn)
		}
	}
	return out
}

// TLSReadCopy is crypto/tls Read's one call of memmove, where its
// plaintext is copied into the caller's buffer; false when Read has not
// exactly one (which copy is the plaintext's could not be told).
func (b *Binary) TLSReadCopy() (uint64, bool) {
	calls := b.Funcs[TLSRead].Calls
	if len(calls) != 1 {
		return 0, false
	}
	return calls[0], true
}

// Unsupported says why weft cannot follow this binary's goroutines, or "".
func (b *Binary) Unsupported() string {
	if b.Arch != "amd64" {
		return "GOARCH " + b.Arch + ": goroutine hooks are written for amd64"
	}
	if !atLeast(b.GoVersion, 1, 17) {
		return b.GoVersion + ": goroutine hooks need Go 1.17+ (register ABI, g in R14)"
	}
	if b.gErr != nil {
		return b.gErr.Error()
	}
	nf, ok := b.Funcs[NewProc1]
	if !ok {
		return NewProc1 + " not found"
	}
	if b.NewProc() == HookCasg && len(nf.Calls) == 0 {
		return NewProc1 + ": no call to " + casgstatus + " found"
	}
	if b.NewProc() != HookCasg && len(nf.Returns) == 0 {
		return NewProc1 + ": no return instruction found"
	}
	_, rt := b.Funcs[RoundTrip]
	_, wl := b.Funcs[WriteLoop]
	if rt != wl {
		return "net/http client found without both " + RoundTrip + " and " + WriteLoop
	}
	return ""
}

// Open reads a Go executable (through /proc/PID/exe, for instance).
func Open(path string) (*Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	return Read(f)
}

// Read reads a Go executable. debug/elf trusts its input: a corrupt file
// gives an error, never a panic.
func Read(r io.ReaderAt) (b *Binary, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("parse executable: %v", p)
		}
	}()
	info, err := buildinfo.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotGo, err)
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("parse ELF: %w", err)
	}
	b = &Binary{GoVersion: info.GoVersion, Funcs: map[string]Func{}}
	for _, s := range info.Settings {
		if s.Key == "GOARCH" {
			b.Arch = s.Value
		}
	}
	if b.Arch == "" && f.Machine == elf.EM_X86_64 {
		b.Arch = "amd64"
	}
	probed := append(append([]string{NewProc1, RoundTrip, WriteLoop, GRPCNewStream, GRPCClientHeaders, GRPCOriginateStream,
		GRPCServeHeaders, GRPCServeStatus, H2ServeRequest, H2ServeHandler, H2ServeDone, XH2ServeRequest, XH2ServeHandler,
		XH2ServeDone}, h2Funcs...), tlsFuncs...)
	// The functions whose calls are probed, by caller.
	callees := map[string]string{NewProc1: casgstatus, GRPCNewStream: grpcExecuteAndPut,
		TLSRead: memmove, TLSWrite: tlsWriteRecord}
	ranges, stripped, err := funcRanges(f, append(probed, casgstatus, grpcExecuteAndPut, memmove, tlsWriteRecord)...)
	if err != nil {
		return nil, err
	}
	b.Stripped = stripped
	b.G, b.gErr = gOffsets(f, b.GoVersion)
	for _, name := range probed {
		rg, ok := ranges[name]
		if !ok {
			continue
		}
		entry, ok := fileOffset(f, rg[0])
		if !ok {
			return nil, fmt.Errorf("%s at %#x: not in a loaded segment", name, rg[0])
		}
		code := make([]byte, rg[1]-rg[0])
		if _, err := r.ReadAt(code, int64(entry)); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		fn := Func{Entry: entry, Probe: entry + probePoint(code)}
		if name == NewProc1 && b.G.Goid != 0 {
			if off, ok := newGSite(code, b.G.Goid); ok {
				fn.NewG = entry + uint64(off)
			}
		}
		if name == TLSRead {
			fn.RecvSlot = receiverSlot(code)
		}
		if name == NewProc1 || slices.Contains(tlsHandshakes, name) {
			for _, off := range returns(code) {
				fn.Returns = append(fn.Returns, entry+off)
			}
		}
		if callee, ok := ranges[callees[name]]; ok {
			for _, off := range probesite.CallSites(code, rg[0], callee[0]) {
				fn.Calls = append(fn.Calls, entry+off)
			}
		}
		b.Funcs[name] = fn
	}
	return b, nil
}

// funcRanges finds [start, end) of each named function: ELF symbols first,
// else the Go function table.
func funcRanges(f *elf.File, names ...string) (map[string][2]uint64, bool, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string][2]uint64{}
	syms, _ := f.Symbols()
	for _, s := range syms {
		if want[s.Name] && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			out[s.Name] = [2]uint64{s.Value, s.Value + s.Size}
		}
	}
	if len(out) == len(want) || len(syms) > 0 {
		return out, false, nil
	}
	tab, err := FuncTable(f, syms)
	if err != nil {
		return nil, true, err
	}
	if tab == nil {
		return nil, true, errors.New("no symbols and no Go function table")
	}
	for _, fn := range tab.Funcs {
		if want[fn.Name] && fn.End > fn.Entry {
			out[fn.Name] = [2]uint64{fn.Entry, fn.End}
		}
	}
	return out, true, nil
}

// fileOffset maps a virtual address to its offset in the file.
func fileOffset(f *elf.File, vaddr uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && vaddr >= p.Vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// decode walks amd64 code instruction by instruction. Go puts no data
// among instructions, so a linear decode sees them all; an undecodable
// byte (padding past the end) stops it.
func decode(code []byte, visit func(off int, inst x86asm.Inst) bool) {
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil || !visit(off, inst) {
			return
		}
		off += inst.Len
	}
}

// returns lists the offsets of the RET instructions.
func returns(code []byte) []uint64 {
	var out []uint64
	decode(code, func(off int, inst x86asm.Inst) bool {
		if inst.Op == x86asm.RET {
			out = append(out, uint64(off))
		}
		return true
	})
	return out
}

// newGSite is the offset in newproc1's code of the first instruction
// uprobes emulate after its one store of the new g's goid (at offset goid
// from RAX, which newproc1 returns), when the instructions between leave
// RAX as it is and run each time that store does.
func newGSite(code []byte, goid uint16) (int, bool) {
	store, n := 0, 0
	decode(code, func(off int, inst x86asm.Inst) bool {
		if m, ok := inst.Args[0].(x86asm.Mem); ok && inst.Op == x86asm.MOV && m.Base == x86asm.RAX &&
			m.Index == 0 && m.Segment == 0 && m.Disp == int64(goid) && inst.MemBytes == 8 {
			store, n = off+inst.Len, n+1
		}
		return true
	})
	if n != 1 {
		return 0, false
	}
	return probesite.SiteAfter(code, store, x86asm.RAX)
}

// probePoint is the offset of the stack check's conditional jump (JBE, to
// runtime.morestack, after which the call starts over) when the
// instructions before it (CMP, or LEA into R12/R13) leave every argument
// register and R14 as they were at entry; else 0, the entry.
func probePoint(code []byte) uint64 {
	point := uint64(0)
	n := 0
	decode(code, func(off int, inst x86asm.Inst) bool {
		n++
		switch {
		case n > 3:
			return false
		case inst.Op == x86asm.JBE:
			if _, ok := inst.Args[0].(x86asm.Rel); ok && off > 0 {
				point = uint64(off)
			}
			return false
		case inst.Op == x86asm.CMP:
			return true
		case inst.Op == x86asm.LEA && (inst.Args[0] == x86asm.R12 || inst.Args[0] == x86asm.R13):
			return true
		}
		return false
	})
	return point
}

// atLeast compares a "go1.M[.P]" version with 1.minor.
func atLeast(v string, major, minor int) bool {
	v = strings.TrimPrefix(v, "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(leadingDigits(parts[1])) // "27rc1"
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
