package tracer

import (
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/weftdev/weft/pkg/kernel"
)

// pathSet is the attach paths whose BPF object holds a program and on
// which weft loads it.
type pathSet uint8

const (
	onKprobe pathSet = 1 << iota
	onTracepoint
	onSyscalls
	onEvery = onKprobe | onTracepoint | onSyscalls
)

func (s pathSet) has(p kernel.Path) bool {
	switch p {
	case kernel.PathKprobe:
		return s&onKprobe != 0
	case kernel.PathTracepoint:
		return s&onTracepoint != 0
	case kernel.PathSyscalls:
		return s&onSyscalls != 0
	}
	return false
}

// feature is the option that has a program loaded.
type feature uint8

const (
	always feature = iota
	propagation
	runtimeHooks
	ioctlPackets
	cgroupSelection
	tlsCapture
)

func (f feature) enabled(opts Options) bool {
	switch f {
	case propagation:
		return opts.Propagation
	case runtimeHooks:
		return opts.RuntimeHooks
	case ioctlPackets:
		return opts.IoctlPackets
	case cgroupSelection:
		return len(opts.Cgroups) > 0
	case tlsCapture:
		return opts.TLS
	}
	return true
}

// A hook is one program of the BPF objects: on which paths and with which
// feature it is loaded, and whether weft can run without it. Where it
// attaches is its ELF section, in the C source. Uprobes attach per
// process (runtime.go) and the sampler while sampling (sample.go); the
// rest at Open, in this order.
type hook struct {
	prog    string
	paths   pathSet
	feature feature
	// lost is, for an optional hook, what weft goes without when it
	// cannot attach (logged); a required hook that fails stops Open.
	lost string
	// via names the program array a tail-call target is entered
	// through: it is loaded when a program that calls through the array
	// is (whatever its own feature), put in the array, and never
	// attached.
	via string
}

func (h hook) optional() bool { return h.lost != "" }

// hooks declares every program of both objects; a program missing here
// fails the load (and TestHooksDeclareEveryProgram).
var hooks = []hook{
	// Processes and socket closes, on every path.
	{prog: "weft_exec", paths: onEvery},
	{prog: "weft_exit", paths: onEvery},
	{prog: "weft_fork", paths: onEvery},
	{prog: "weft_cgroup_move", paths: onEvery, feature: cgroupSelection},
	{prog: "weft_sock_state", paths: onEvery},
	{prog: "weft_sock_reset", paths: onEvery, lost: "a reset by the peer reads as its close (no error on the span)"},
	{prog: "weft_sample", paths: onEvery},
	// Run by user space to classify a process (runtime.go), never attached.
	{prog: "weft_set_mode", paths: onEvery},

	// The kprobe path: the TCP send and receive functions.
	{prog: "weft_tcp_sendmsg", paths: onKprobe},
	{prog: "weft_tcp_sendmsg_ret", paths: onKprobe},
	{prog: "weft_tcp_recvmsg", paths: onKprobe},
	{prog: "weft_tcp_recvmsg_ret", paths: onKprobe},
	{prog: "weft_tcp_bpf_sendmsg", paths: onKprobe, feature: propagation},
	{prog: "weft_tcp_bpf_sendmsg_ret", paths: onKprobe, feature: propagation},
	{prog: "weft_sys_ioctl", paths: onKprobe, feature: ioctlPackets, lost: "OBI agents' ioctl packets go unread"},

	// The tracepoint path: socket calls only.
	{prog: "weft_sock_sent", paths: onTracepoint},
	{prog: "weft_sock_received", paths: onTracepoint},
	{prog: "weft_inject_sock", paths: onTracepoint, feature: propagation},

	// The syscall path: the socket tracepoints of the calls whose entry
	// the syscall tracepoints noted.
	{prog: "weft_sock_send", paths: onSyscalls},
	{prog: "weft_sock_recv", paths: onSyscalls},
	{prog: "weft_enter_read", paths: onSyscalls},
	{prog: "weft_exit_read", paths: onSyscalls},
	{prog: "weft_enter_readv", paths: onSyscalls},
	{prog: "weft_exit_readv", paths: onSyscalls},
	{prog: "weft_enter_recvfrom", paths: onSyscalls},
	{prog: "weft_exit_recvfrom", paths: onSyscalls},
	{prog: "weft_enter_recvmsg", paths: onSyscalls},
	{prog: "weft_exit_recvmsg", paths: onSyscalls},
	{prog: "weft_enter_write", paths: onSyscalls},
	{prog: "weft_exit_write", paths: onSyscalls},
	{prog: "weft_enter_writev", paths: onSyscalls},
	{prog: "weft_exit_writev", paths: onSyscalls},
	{prog: "weft_enter_sendto", paths: onSyscalls},
	{prog: "weft_exit_sendto", paths: onSyscalls},
	{prog: "weft_enter_sendmsg", paths: onSyscalls},
	{prog: "weft_exit_sendmsg", paths: onSyscalls},
	{prog: "weft_inject", paths: onKprobe | onSyscalls, feature: propagation},
	{prog: "weft_enter_ioctl", paths: onTracepoint | onSyscalls, feature: ioctlPackets, lost: "OBI agents' ioctl packets go unread"},

	// Injection: sockops puts traced clients' sockets in the sockhash the
	// sk_msg program runs on (one variant of the two is loaded).
	{prog: "weft_sockops", paths: onEvery, feature: propagation},
	{prog: "weft_sockops_any", paths: onEvery, feature: propagation},

	// Runtimes' uprobes, per process.
	{prog: "weft_go_newproc1", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_newproc1_casg", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_newproc1_ret", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_roundtrip", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_writeloop", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_h2_headers", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_grpc_put", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_grpc_headers", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_grpc_serve_headers", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_h2_serve_request", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_h2_serve_handler", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_go_h2_serve_done", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_ngx_upstream_init", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_ngx_upstream_init_ret", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_ngx_connect_peer", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_ngx_connect_peer_ret", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_node_announce", paths: onEvery, feature: runtimeHooks},
	{prog: "weft_libc_announce", paths: onEvery, feature: runtimeHooks},

	// TLS libraries' uprobes, per process.
	// One of the two forms is loaded (dropTLSVariant).
	{prog: "weft_ssl_enter", paths: onEvery, feature: tlsCapture},
	{prog: "weft_ssl_ret", paths: onEvery, feature: tlsCapture},
	{prog: "weft_ssl_enter_multi", paths: onEvery, feature: tlsCapture},
	{prog: "weft_ssl_ret_multi", paths: onEvery, feature: tlsCapture},
	{prog: "weft_go_tls", paths: onEvery, feature: tlsCapture},
	{prog: "weft_go_tls_multi", paths: onEvery, feature: tlsCapture},
	{prog: "weft_jvm_tls", paths: onEvery, feature: tlsCapture},
	{prog: "weft_jvm_tls_multi", paths: onEvery, feature: tlsCapture},
	{prog: "weft_jvm_tls_request", paths: onEvery, feature: tlsCapture},
	{prog: "weft_jvm_h2_claim", paths: onEvery, feature: tlsCapture},

	// The programs that emit the data path's events, tail-called by the
	// programs above that see socket calls and TLS plaintext, one per
	// program type (common.h, emit_data).
	{prog: "weft_emit_probe", paths: onEvery, via: "emit_probe_progs"},
	{prog: "weft_emit_multi", paths: onEvery, via: "emit_multi_progs"},
	{prog: "weft_emit_sock", paths: onTracepoint, via: "emit_sock_progs"},
	{prog: "weft_emit_exit", paths: onSyscalls, via: "emit_exit_progs"},
}

// hookIndex finds a program's declaration.
var hookIndex = func() map[string]hook {
	m := make(map[string]hook, len(hooks))
	for _, h := range hooks {
		m[h.prog] = h
	}
	return m
}()

// dropDisabled removes from spec the programs of features opts leaves
// off and those of other paths, so that the verifier spends no time on
// them and none of them can run. A program the table does not declare is
// an error: nothing is loaded by accident.
func dropDisabled(spec *ebpf.CollectionSpec, opts Options) error {
	for name := range spec.Programs {
		h, ok := hookIndex[name]
		if !ok {
			return fmt.Errorf("program %s is not declared in the hook table", name)
		}
		if !h.paths.has(opts.Path) || !h.feature.enabled(opts) {
			delete(spec.Programs, name)
		}
	}
	for _, h := range hooks {
		if h.via != "" && spec.Programs[h.prog] != nil && !callsThrough(spec, h.via) {
			delete(spec.Programs, h.prog)
		}
	}
	return nil
}

// callsThrough reports whether a program of spec uses program array m.
func callsThrough(spec *ebpf.CollectionSpec, m string) bool {
	for _, p := range spec.Programs {
		for _, ins := range p.Instructions {
			if ins.IsLoadFromMap() && ins.Reference() == m {
				return true
			}
		}
	}
	return false
}

// fillProgramArrays puts each loaded tail-call target in its array. The
// arrays must stay open as long as the programs run: the kernel empties
// a program array when its last file descriptor closes.
func fillProgramArrays(coll *ebpf.Collection) error {
	for _, h := range hooks {
		prog := coll.Programs[h.prog]
		if h.via == "" || prog == nil {
			continue
		}
		m := coll.Maps[h.via]
		if m == nil {
			return fmt.Errorf("program array %s missing", h.via)
		}
		if err := m.Put(uint32(0), prog); err != nil {
			return fmt.Errorf("put %s in %s: %w", h.prog, h.via, err)
		}
	}
	return nil
}

// objects are the maps and programs user space reaches, by the names they
// have in both BPF objects; Collection.Assign checks at load that each is
// there, so that a renamed map fails Open instead of a later lookup. They
// leave the collection with Assign: the tracer closes them.
type objects struct {
	CgroupFilter *ebpf.Map     `ebpf:"cgroup_filter"`
	ClientSocks  *ebpf.Map     `ebpf:"client_socks"`
	EagainRetry  *ebpf.Map     `ebpf:"eagain_retry"`
	Events       *ebpf.Map     `ebpf:"events"`
	GoH2Fresh    *ebpf.Map     `ebpf:"go_h2_fresh"`
	LastDrop     *ebpf.Map     `ebpf:"last_drop"`
	NotHTTPSocks *ebpf.Map     `ebpf:"not_http_socks"`
	PidFilter    *ebpf.Map     `ebpf:"pid_filter"`
	ProcMode     *ebpf.Map     `ebpf:"proc_mode"`
	Samples      *ebpf.Map     `ebpf:"samples"`
	SamplesBegun *ebpf.Map     `ebpf:"samples_begun"`
	Stats        *ebpf.Map     `ebpf:"stats"`
	TracesCtx    *ebpf.Map     `ebpf:"traces_ctx_v1"`
	ThreadSlot   *ebpf.Map     `ebpf:"thread_slot"`
	Sample       *ebpf.Program `ebpf:"weft_sample"`
	SetMode      *ebpf.Program `ebpf:"weft_set_mode"`
	// Set by BPF at a thread's first slot registration; by pullSlots
	// for registrations made before weft started.
	SlotsInUse *ebpf.Variable `ebpf:"slots_in_use"`
}

// runtimePrograms are the uprobes attached per process, loaded with
// Options.RuntimeHooks.
type runtimePrograms struct {
	GoNewproc1         *ebpf.Program `ebpf:"weft_go_newproc1"`
	GoNewproc1Casg     *ebpf.Program `ebpf:"weft_go_newproc1_casg"`
	GoNewproc1Ret      *ebpf.Program `ebpf:"weft_go_newproc1_ret"`
	GoRoundtrip        *ebpf.Program `ebpf:"weft_go_roundtrip"`
	GoWriteloop        *ebpf.Program `ebpf:"weft_go_writeloop"`
	GoH2Headers        *ebpf.Program `ebpf:"weft_go_h2_headers"`
	GoGRPCPut          *ebpf.Program `ebpf:"weft_go_grpc_put"`
	GoGRPCHeaders      *ebpf.Program `ebpf:"weft_go_grpc_headers"`
	GoGRPCServeHeaders *ebpf.Program `ebpf:"weft_go_grpc_serve_headers"`
	GoH2ServeRequest   *ebpf.Program `ebpf:"weft_go_h2_serve_request"`
	GoH2ServeHandler   *ebpf.Program `ebpf:"weft_go_h2_serve_handler"`
	GoH2ServeDone      *ebpf.Program `ebpf:"weft_go_h2_serve_done"`
	NgxUpstreamInit    *ebpf.Program `ebpf:"weft_ngx_upstream_init"`
	NgxUpstreamInitRet *ebpf.Program `ebpf:"weft_ngx_upstream_init_ret"`
	NgxConnectPeer     *ebpf.Program `ebpf:"weft_ngx_connect_peer"`
	NgxConnectPeerRet  *ebpf.Program `ebpf:"weft_ngx_connect_peer_ret"`
	NodeAnnounce       *ebpf.Program `ebpf:"weft_node_announce"`
	LibcAnnounce       *ebpf.Program `ebpf:"weft_libc_announce"`
}

// tlsPrograms are the TLS libraries' uprobes, attached per process,
// loaded with Options.TLS.
type tlsPrograms struct {
	Enter      *ebpf.Program `ebpf:"weft_ssl_enter"`
	Ret        *ebpf.Program `ebpf:"weft_ssl_ret"`
	EnterMulti *ebpf.Program `ebpf:"weft_ssl_enter_multi"`
	RetMulti   *ebpf.Program `ebpf:"weft_ssl_ret_multi"`
	Go         *ebpf.Program `ebpf:"weft_go_tls"`
	GoMulti    *ebpf.Program `ebpf:"weft_go_tls_multi"`
	JVM        *ebpf.Program `ebpf:"weft_jvm_tls"`
	JVMMulti   *ebpf.Program `ebpf:"weft_jvm_tls_multi"`
	JVMRequest *ebpf.Program `ebpf:"weft_jvm_tls_request"`
	JVMH2      *ebpf.Program `ebpf:"weft_jvm_h2_claim"`
}

func (p *tlsPrograms) Close() error {
	return closeAll(p.Enter, p.Ret, p.EnterMulti, p.RetMulti, p.Go, p.GoMulti, p.JVM, p.JVMMulti, p.JVMRequest, p.JVMH2)
}

// assign takes from coll the form of the TLS probes that was loaded.
func (p *tlsPrograms) assign(coll *ebpf.Collection) error {
	var jvm struct {
		Request *ebpf.Program `ebpf:"weft_jvm_tls_request"`
		H2      *ebpf.Program `ebpf:"weft_jvm_h2_claim"`
	}
	if err := coll.Assign(&jvm); err != nil {
		return err
	}
	p.JVMRequest, p.JVMH2 = jvm.Request, jvm.H2
	if _, ok := coll.Programs["weft_ssl_enter_multi"]; ok {
		var m struct {
			Enter *ebpf.Program `ebpf:"weft_ssl_enter_multi"`
			Ret   *ebpf.Program `ebpf:"weft_ssl_ret_multi"`
			Go    *ebpf.Program `ebpf:"weft_go_tls_multi"`
			JVM   *ebpf.Program `ebpf:"weft_jvm_tls_multi"`
		}
		err := coll.Assign(&m)
		p.EnterMulti, p.RetMulti, p.GoMulti, p.JVMMulti = m.Enter, m.Ret, m.Go, m.JVM
		return err
	}
	var u struct {
		Enter *ebpf.Program `ebpf:"weft_ssl_enter"`
		Ret   *ebpf.Program `ebpf:"weft_ssl_ret"`
		Go    *ebpf.Program `ebpf:"weft_go_tls"`
		JVM   *ebpf.Program `ebpf:"weft_jvm_tls"`
	}
	err := coll.Assign(&u)
	p.Enter, p.Ret, p.Go, p.JVM = u.Enter, u.Ret, u.Go, u.JVM
	return err
}

// dropTLSVariant keeps the form of the TLS probes this kernel can attach:
// uprobe_multi links (Linux 6.6+), whose removal is cheap, else
// perf-event uprobes.
func dropTLSVariant(spec *ebpf.CollectionSpec) {
	if features.HaveBPFLinkUprobeMulti() == nil {
		delete(spec.Programs, "weft_ssl_enter")
		delete(spec.Programs, "weft_ssl_ret")
		delete(spec.Programs, "weft_go_tls")
		delete(spec.Programs, "weft_jvm_tls")
	} else {
		delete(spec.Programs, "weft_ssl_enter_multi")
		delete(spec.Programs, "weft_ssl_ret_multi")
		delete(spec.Programs, "weft_go_tls_multi")
		delete(spec.Programs, "weft_jvm_tls_multi")
	}
}

func (o *objects) Close() error {
	return closeAll(o.CgroupFilter, o.ClientSocks, o.EagainRetry, o.Events, o.GoH2Fresh, o.LastDrop, o.NotHTTPSocks, o.PidFilter,
		o.ProcMode, o.Samples, o.SamplesBegun, o.Stats, o.TracesCtx, o.Sample, o.SetMode)
}

func (r *runtimePrograms) Close() error {
	return closeAll(r.GoNewproc1, r.GoNewproc1Casg, r.GoNewproc1Ret, r.GoRoundtrip, r.GoWriteloop, r.GoH2Headers, r.GoGRPCPut, r.GoGRPCHeaders,
		r.GoGRPCServeHeaders, r.GoH2ServeRequest, r.GoH2ServeHandler, r.GoH2ServeDone,
		r.NgxUpstreamInit,
		r.NgxUpstreamInitRet, r.NgxConnectPeer, r.NgxConnectPeerRet, r.NodeAnnounce, r.LibcAnnounce)
}

// closeAll closes what was assigned; a nil map or program (where Assign
// stopped early) closes as a no-op.
func closeAll(cs ...io.Closer) error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
