// Command loopback proves a guest can run weft's kprobe path: loopback TCP
// works, BTF is exposed, and both a tracefs kprobe and BPF kprobe/kretprobe
// programs on tcp_sendmsg fire on that traffic.
// It prints one "ok"/"FAIL" line per check and exits 0 only if all pass.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

const (
	tracing = "/sys/kernel/tracing"
	probe   = "weft_qemu_tcp_sendmsg"
)

func main() {
	failed := false
	check := func(name string, err error) {
		if err != nil {
			failed = true
			fmt.Printf("FAIL %s: %v\n", name, err)
			return
		}
		fmt.Printf("ok %s\n", name)
	}
	check("btf", checkBTF())
	check("available_filter_functions has tcp_sendmsg", checkFilterFunction("tcp_sendmsg"))
	check("kprobe on tcp_sendmsg fires on loopback TCP", checkKprobe())
	check("bpf kprobe and kretprobe on tcp_sendmsg fire", checkBPFKprobes())
	if failed {
		os.Exit(1)
	}
}

func checkBTF() error {
	st, err := os.Stat("/sys/kernel/btf/vmlinux")
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return errors.New("/sys/kernel/btf/vmlinux is empty")
	}
	fmt.Printf("btf vmlinux size=%d\n", st.Size())
	return nil
}

func checkFilterFunction(fn string) error {
	f, err := os.Open(tracing + "/available_filter_functions")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Lines are "name" or "name [module]".
		if name, _, _ := strings.Cut(sc.Text(), " "); name == fn {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s not listed", fn)
}

// checkKprobe registers a tracefs kprobe, which uses the same kernel kprobe
// machinery as a BPF kprobe, and counts its hits around a TCP exchange.
func checkKprobe() (err error) {
	if err := appendFile(tracing+"/kprobe_events", "p:"+probe+" tcp_sendmsg\n"); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	defer func() {
		if rerr := appendFile(tracing+"/kprobe_events", "-:"+probe+"\n"); err == nil && rerr != nil {
			err = fmt.Errorf("unregister: %w", rerr)
		}
	}()
	// A kprobe event is armed only while enabled.
	enable := tracing + "/events/kprobes/" + probe + "/enable"
	if err := appendFile(enable, "1\n"); err != nil {
		return fmt.Errorf("enable: %w", err)
	}
	defer func() {
		if derr := appendFile(enable, "0\n"); err == nil && derr != nil {
			err = fmt.Errorf("disable: %w", derr)
		}
	}()
	before, err := probeHits()
	if err != nil {
		return err
	}
	if err := exchange(); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	after, err := probeHits()
	if err != nil {
		return err
	}
	fmt.Printf("tcp_sendmsg kprobe hits=%d\n", after-before)
	if after-before < 2 {
		return fmt.Errorf("%d hits for 2 sends", after-before)
	}
	return nil
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// probeHits reads the hit count from kprobe_profile ("name hits misses").
func probeHits() (uint64, error) {
	b, err := os.ReadFile(tracing + "/kprobe_profile")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == probe {
			return strconv.ParseUint(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s not in kprobe_profile", probe)
}

// exchange sends "ping" and "pong" over a 127.0.0.1 TCP connection.
func exchange() error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			served <- err
			return
		}
		if string(buf) != "ping" {
			served <- fmt.Errorf("server got %q", buf)
			return
		}
		_, err = c.Write([]byte("pong"))
		served <- err
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "pong" {
		return fmt.Errorf("client got %q", buf)
	}
	if err := <-served; err != nil {
		return fmt.Errorf("server: %w", err)
	}
	fmt.Printf("loopback exchange ok via %s\n", ln.Addr())
	return nil
}
