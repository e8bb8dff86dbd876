package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/tracer"
)

func doctorCmd(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("doctor takes no arguments")
	}
	return doctor(os.Stdout, os.Geteuid() == 0)
}

// doctor prints what the kernel offers and which path weft would take,
// and loads both program sets through the verifier when it can.
func doctor(w io.Writer, root bool) error {
	if root {
		// Tracepoints need tracefs; mounting it is what `weft run` does too.
		if _, err := kernel.EnsureTracefs(); err != nil {
			fmt.Fprintf(w, "warning: %v\n", err)
		}
		if _, err := kernel.EnsureSecurityfs(); err != nil {
			fmt.Fprintf(w, "warning: %v\n", err)
		}
	}
	f := kernel.Probe()
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	orNone := func(s string) string {
		if s == "" {
			return "not mounted"
		}
		return s
	}
	fmt.Fprintf(w, "kernel            %s\n", f.Release)
	fmt.Fprintf(w, "BTF (CO-RE)       %s\n", yes(f.BTF))
	fmt.Fprintf(w, "kprobes           %s\n", yes(f.Kprobes))
	fmt.Fprintf(w, "sock tracepoints  %s (sock:sock_send_length, Linux 6.3+)\n", yes(f.SockLengthTracepoints))
	fmt.Fprintf(w, "lockdown          %s\n", f.Lockdown)
	fmt.Fprintf(w, "tracefs           %s\n", orNone(f.Tracefs))
	fmt.Fprintf(w, "cgroup v2         %s\n", orNone(f.CgroupV2))
	fmt.Fprintf(w, "bpffs             %s\n", orNone(f.Bpffs))

	var problems []error
	if !f.BTF {
		problems = append(problems, errors.New("no BTF at /sys/kernel/btf/vmlinux: weft's CO-RE programs cannot load (needs CONFIG_DEBUG_INFO_BTF=y)"))
	}
	path, err := f.ChoosePath("auto")
	if err != nil {
		problems = append(problems, err)
	} else {
		fmt.Fprintf(w, "attach path       %s\n", path)
	}
	switch {
	case f.CgroupV2 == "":
		fmt.Fprintln(w, "injection         NOT possible: no cgroup v2 mount for sockops (traces stop at each service)")
	case tracer.SockopsKnowsProcess():
		fmt.Fprintf(w, "injection         possible: sockops on %s picks traced processes' connections, sk_msg writes traceparent\n", f.CgroupV2)
	default:
		fmt.Fprintf(w, "injection         possible: sockops on %s takes every client connection (this kernel's sockops cannot tell the process), sk_msg writes traceparent only for traced processes\n", f.CgroupV2)
	}
	if root && f.BTF {
		for _, p := range []kernel.Path{kernel.PathKprobe, kernel.PathTracepoint} {
			coll, err := tracer.Load(tracer.Options{Path: p, CaptureBytes: 256, SelfPID: uint32(os.Getpid())})
			if err != nil {
				fmt.Fprintf(w, "verifier %-10s FAILED: %v\n", p, err)
				if p == path {
					problems = append(problems, fmt.Errorf("the %s programs do not load", p))
				}
				continue
			}
			coll.Close()
			fmt.Fprintf(w, "verifier %-10s ok\n", p)
		}
	} else if !root {
		fmt.Fprintln(w, "verifier          not checked (run as root)")
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(w, "problem: %v\n", p)
		}
		return errors.Join(problems...)
	}
	fmt.Fprintln(w, "weft can run here.")
	return nil
}
