package jvmattach

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Jcmd runs one diagnostic command in the HotSpot JVM pid, as `jcmd <pid>
// <command>` would, and returns its output. weft's profiler uses it for
// Compiler.perfmap, which makes the JVM write /tmp/perf-<pid>.map, the
// names of its JIT-compiled code.
func Jcmd(ctx context.Context, pid int, command string, timeout time.Duration) (string, error) {
	out, err := jcmd(ctx, pid, command, timeout)
	if err != nil {
		return "", fmt.Errorf("jcmd %d %s: %w", pid, command, err)
	}
	return out, nil
}

func jcmd(ctx context.Context, pid int, command string, timeout time.Duration) (string, error) {
	if pid <= 0 {
		return "", errors.New("invalid pid")
	}
	if timeout <= 0 {
		timeout = DefaultSocketTimeout
	}
	log := slog.Default().With("component", "jvmattach", "pid", pid)
	p, err := readProcess(pid)
	if err != nil {
		return "", err
	}
	switch kind, err := detectVM(pid); {
	case err != nil:
		return "", err
	case kind != vmHotSpot:
		return "", ErrNotJVM
	}
	as := identity{p.uid, p.gid}
	if os.Geteuid() != 0 {
		if os.Geteuid() != p.uid {
			return "", fmt.Errorf("the JVM runs as uid %d and weft as uid %d", p.uid, os.Geteuid())
		}
		as = self()
	}
	root, err := os.OpenRoot(fmt.Sprintf("/proc/%d/root", pid))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", ErrNoProcess
		}
		return "", fmt.Errorf("open the JVM's root: %w", err)
	}
	defer root.Close()
	tmp, err := root.OpenRoot("tmp")
	if err != nil {
		return "", fmt.Errorf("open the JVM's /tmp: %w", err)
	}
	defer tmp.Close()
	req, err := encodeRequest("jcmd", command)
	if err != nil {
		return "", err
	}
	conn, err := connect(ctx, p, as, tmp, timeout, log)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", fmt.Errorf("set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	reply, err := exchange(conn, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || err == nil && len(reply) == 0:
		return "", fmt.Errorf("the JVM closed the connection without replying; it takes requests only from uid %d gid %d or root", p.uid, p.gid)
	case err != nil:
		return "", err
	}
	return parseJcmdReply(reply)
}

// parseJcmdReply splits "<status>\n<output>"; a non-zero status is the
// command's failure, its output the reason.
func parseJcmdReply(reply []byte) (string, error) {
	line, out, _ := strings.Cut(string(reply), "\n")
	status, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return "", fmt.Errorf("malformed reply %q", truncate(string(reply)))
	}
	if status != 0 {
		msg := strings.TrimSpace(out)
		if msg == "" {
			msg = "no message"
		}
		return "", fmt.Errorf("the JVM refused (status %d): %s", status, truncate(msg))
	}
	return out, nil
}
