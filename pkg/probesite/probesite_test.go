package probesite

import (
	"bytes"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// Instructions as gcc and clang emit them in prologues.
var (
	subRSP    = []byte{0x48, 0x83, 0xec, 0x18}                      // sub $0x18,%rsp
	canary    = []byte{0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0} // mov %fs:0x28,%rax
	spill     = []byte{0x48, 0x89, 0x44, 0x24, 0x08}                // mov %rax,0x8(%rsp)
	xorEAX    = []byte{0x31, 0xc0}                                  // xor %eax,%eax
	testEDX   = []byte{0x85, 0xd2}                                  // test %edx,%edx
	testRDI   = []byte{0x48, 0x85, 0xff}                            // test %rdi,%rdi
	jle8      = []byte{0x7e, 0x12}                                  // jle .+0x14
	jle32     = []byte{0x0f, 0x8e, 0x10, 0, 0, 0}                   // jle .+0x16
	je8       = []byte{0x74, 0x10}                                  // je
	pushRBX   = []byte{0x53}                                        // push %rbx
	pushR13   = []byte{0x41, 0x55}                                  // push %r13
	pushRBP   = []byte{0x55}                                        // push %rbp
	movRBP    = []byte{0x48, 0x89, 0xe5}                            // mov %rsp,%rbp
	movRSPRCX = []byte{0x48, 0x89, 0xe1}                            // mov %rsp,%rcx
	movslqRDX = []byte{0x48, 0x63, 0xd2}                            // movslq %edx,%rdx
	movRSIRDI = []byte{0x48, 0x89, 0xf7}                            // mov %rsi,%rdi
	movDLtoR8 = []byte{0x41, 0x88, 0xd0}                            // mov %dl,%r8b
	ret       = []byte{0xc3}                                        // ret
	callRAX   = []byte{0xff, 0xd0}                                  // call *%rax
	call      = func(rel int32) []byte { return le(0xe8, rel) }     // call rel32
	jmp       = func(rel int32) []byte { return le(0xe9, rel) }     // jmp rel32
)

func le(op byte, rel int32) []byte {
	return []byte{op, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
}

func code(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// The instructions the kernel emulates, and some it single-steps.
func TestEmulated(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
		want bool
	}{
		{"push %rbx", pushRBX, true},
		{"push %r13", pushR13, true},
		{"push %rbp", pushRBP, true},
		{"nop", []byte{0x90}, true},
		{"call", call(0x100), true},
		{"jmp rel32", jmp(-0x100), true},
		{"jmp rel8", []byte{0xeb, 0x02}, true},
		{"jle rel8", jle8, true},
		{"jle rel32", jle32, true},
		{"sub $0x18,%rsp", subRSP, false},
		{"endbr64", endbr64, false},
		{"xor %eax,%eax", xorEAX, false},
		{"mov %rsp,%rbp", movRBP, false},
		{"ret", ret, false},
		{"call *%rax", callRAX, false},
		{"xchg %ax,%ax (66 90)", []byte{0x66, 0x90}, false},
		{"push with REX.W", []byte{0x48, 0x53}, false},
		{"nopl (0f 1f)", []byte{0x0f, 0x1f, 0x00}, false},
		{"empty", nil, false},
	} {
		if got := Emulated(c.code); got != c.want {
			t.Errorf("Emulated(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestEntrySite(t *testing.T) {
	for _, c := range []struct {
		name  string
		code  []byte
		nargs int
		want  int
		ok    bool
	}{
		{"emulated entry", code(pushRBX, subRSP), 3, 0, true},
		// OpenSSL 3's BIO_write: a stack canary, then the length check.
		{"canary then jle", code(subRSP, canary, spill, xorEAX, testEDX, jle8), 3, 22, true},
		{"canary then jle rel32", code(subRSP, canary, spill, xorEAX, testEDX, jle32), 3, 22, true},
		// SSL_free: a NULL check.
		{"test then je", code(testRDI, je8), 1, 3, true},
		{"endbr64 then push", code(endbr64, pushRBP, movRBP), 2, 4, true},
		{"argument widened first", code(movslqRDX, jle8), 3, 0, false},
		{"a later argument changed", code(movslqRDX, jle8), 2, 3, true},
		{"byte register of an argument", code(movDLtoR8, jle8), 5, 0, false},
		{"byte register of another", code(movDLtoR8, jle8), 4, 3, true},
		{"first argument overwritten", code(movRSIRDI, pushRBX), 1, 0, false},
		{"ret first", code(xorEAX, ret, pushRBX), 1, 0, false},
		{"indirect call first", code(callRAX, pushRBX), 1, 0, false},
		// glibc's access: the system call's number, the call, its check.
		{"past a system call", code([]byte{0xb8, 0x15, 0, 0, 0}, []byte{0x0f, 0x05}, []byte{0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff}, jle32), 1, 13, true},
		{"a system call clobbers the fourth", code([]byte{0x0f, 0x05}, jle8), 4, 0, false},
		{"beyond reach", code(bytes.Repeat(testEDX, walkLimit), pushRBX), 1, 0, false},
	} {
		got, ok := EntrySite(c.code, c.nargs)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: EntrySite = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestDelegate(t *testing.T) {
	const base = 0x354c0
	for _, c := range []struct {
		name string
		code []byte
		want uint64
		ok   bool
	}{
		// OpenSSL 3's SSL_read_ex: align the stack, call ssl_read_internal.
		{"sub then call", code([]byte{0x48, 0x83, 0xec, 0x08}, call(-0x239)), base + 9 - 0x239, true},
		{"pushes then call", code(pushR13, pushRBP, call(0x40)), base + 8 + 0x40, true},
		{"nop then call", code([]byte{0x90}, call(0x40)), base + 6 + 0x40, true},
		{"tail jump", code(endbr64, jmp(0x1000)), base + 9 + 0x1000, true},
		{"fourth argument replaced", code(subRSP, movRSPRCX, call(0x40)), 0, false},
		{"a branch before the call", code(testEDX, jle8, call(0x40)), 0, false},
		{"indirect call", code(subRSP, callRAX), 0, false},
		{"no call", code(subRSP, ret), 0, false},
	} {
		got, ok := Delegate(c.code, base, 4)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: Delegate = %#x, %v; want %#x, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestCalls(t *testing.T) {
	const base = 0x1000
	// SSL_read's shape: check the length, call the worker, return.
	fn := code(subRSP, testEDX, jle8, movRSPRCX, movslqRDX, call(0x200), testEDX, ret)
	worker := uint64(base + 4 + 2 + 2 + 3 + 3 + 5 + 0x200)
	if !Calls(fn, base, worker) {
		t.Errorf("Calls(fn, worker %#x) = false", worker)
	}
	if !Calls(fn, base, 0x42, worker) {
		t.Error("Calls with the worker second = false")
	}
	if Calls(fn, base, worker+1) {
		t.Error("Calls(fn, worker+1) = true")
	}
	if Calls(code(subRSP, callRAX, ret), base, worker) {
		t.Error("an indirect call counted as a direct one")
	}
}

// CallSites lists direct calls only: not a jump to the target, nor an
// indirect call.
func TestCallSites(t *testing.T) {
	const base = 0x1000
	// call target; jmp target; call *%rax; call target: the target at 0x100.
	fn := code(call(0x100-5), jmp(0x100-10), callRAX, call(0x100-17), ret)
	got := CallSites(fn, base, base+0x100)
	if len(got) != 2 || got[0] != 0 || got[1] != 12 {
		t.Errorf("CallSites = %v, want [0 12]", got)
	}
	if got := CallSites(fn, base, base+0x101); len(got) != 0 {
		t.Errorf("CallSites of another target = %v", got)
	}
}

// Go 1.23's newproc1 after it stores the new goroutine's id through RAX:
// an increment in memory, then an inlining mark's NOP, which is emulated.
func TestSiteAfter(t *testing.T) {
	storeGoid := []byte{0x4c, 0x89, 0x80, 0xa0, 0, 0, 0}    // mov %r8,0xa0(%rax)
	incMem := []byte{0x48, 0xff, 0x82, 0x78, 0x01, 0, 0}    // incq 0x178(%rdx)
	loadRAX := []byte{0x48, 0x8b, 0x44, 0x24, 0x40}         // mov 0x40(%rsp),%rax
	movups := []byte{0x44, 0x0f, 0x11, 0xb8, 0x98, 1, 0, 0} // movups %xmm15,0x198(%rax)
	for _, c := range []struct {
		name string
		code []byte
		want int
		ok   bool
	}{
		{"increment then nop", code(storeGoid, incMem, []byte{0x90}), 14, true},
		{"vector store then test and jump", code(storeGoid, movups, testEDX, je8), 17, true},
		{"RAX reloaded first", code(storeGoid, loadRAX, []byte{0x90}), 0, false},
		{"a system call clobbers RAX", code(storeGoid, []byte{0x0f, 0x05}, je8), 0, false},
	} {
		got, ok := SiteAfter(c.code, len(storeGoid), x86asm.RAX)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: SiteAfter = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
