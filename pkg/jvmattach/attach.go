// Package jvmattach loads a Java agent into a running HotSpot JVM through
// HotSpot's dynamic attach mechanism, the one behind jcmd and
// VirtualMachine.loadAgent, without a JDK on the host.
//
// A JVM starts its attach listener when it receives SIGQUIT while a file
// .attach_pid<pid> exists in its working directory or in /tmp; the listener
// then serves the Unix socket /tmp/.java_pid<pid>. Both the paths and the
// pid are the JVM's own view, so a JVM in a container is reached through
// /proc/<pid>/root and the pid it has in its own pid namespace.
package jvmattach

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	// ErrNoProcess: the pid does not exist (or has exited).
	ErrNoProcess = errors.New("no such process")
	// ErrNotJVM: the process is not a HotSpot JVM.
	ErrNotJVM = errors.New("not a HotSpot JVM")
	// ErrTimeout: the JVM never opened its attach socket.
	ErrTimeout = errors.New("the JVM did not open its attach socket")
)

// Defaults for Options.
const (
	DefaultSocketTimeout = 10 * time.Second
	DefaultReplyTimeout  = 2 * time.Minute
)

// Options describe one agent load.
type Options struct {
	// JarPath is the agent jar, a path in weft's own filesystem view. Its
	// manifest needs an Agent-Class.
	JarPath string
	// AgentArgs is passed to agentmain as is; empty passes null.
	AgentArgs string
	// SocketTimeout bounds the wait for the JVM to open its attach socket.
	SocketTimeout time.Duration
	// ReplyTimeout bounds the load itself, agentmain included.
	ReplyTimeout time.Duration
	// Logger receives debug detail; nil means slog.Default().
	Logger *slog.Logger
}

// Attach loads the agent jarPath into the JVM pid with default options;
// agentArgs reaches agentmain as its first argument.
func Attach(ctx context.Context, pid int, jarPath, agentArgs string) error {
	return AttachWithOptions(ctx, pid, Options{JarPath: jarPath, AgentArgs: agentArgs})
}

// AttachWithOptions loads an agent into the JVM pid (a pid in weft's pid
// namespace). Errors match ErrNoProcess, ErrNotJVM and ErrTimeout with
// errors.Is; an agent that does not start is an *AgentError.
func AttachWithOptions(ctx context.Context, pid int, opts Options) error {
	for attempt := 1; ; attempt++ {
		err := attach(ctx, pid, opts)
		var refused *loadRefused
		if err == nil {
			return nil
		}
		if !errors.As(err, &refused) || !refused.tooEarly() || attempt == earlyAttempts {
			return fmt.Errorf("attach %d: %w", pid, err)
		}
		select {
		case <-time.After(earlyRetryDelay):
		case <-ctx.Done():
			return fmt.Errorf("attach %d: %w", pid, ctx.Err())
		}
	}
}

// A load that a JVM still starting refuses is tried again, a few times.
const (
	earlyAttempts   = 5
	earlyRetryDelay = 100 * time.Millisecond
)

func attach(ctx context.Context, pid int, opts Options) error {
	if pid <= 0 {
		return errors.New("invalid pid")
	}
	if opts.JarPath == "" {
		return errors.New("no agent jar given")
	}
	if opts.SocketTimeout <= 0 {
		opts.SocketTimeout = DefaultSocketTimeout
	}
	if opts.ReplyTimeout <= 0 {
		opts.ReplyTimeout = DefaultReplyTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "jvmattach", "pid", pid)

	p, err := readProcess(pid)
	if err != nil {
		return err
	}
	switch kind, err := detectVM(pid); {
	case err != nil:
		return err
	case kind == vmOpenJ9:
		return fmt.Errorf("%w: it is an OpenJ9 JVM, whose attach mechanism differs", ErrNotJVM)
	case kind != vmHotSpot:
		return fmt.Errorf("%w: no libjvm.so among its mappings", ErrNotJVM)
	}

	// HotSpot takes requests only from its own euid/egid or root. Root acts
	// as the JVM's user, which also holds in a user namespace where weft's
	// root means nothing; anyone else must be that user already.
	as := identity{p.uid, p.gid}
	if os.Geteuid() != 0 {
		if os.Geteuid() != p.uid {
			return fmt.Errorf("the JVM runs as uid %d and weft as uid %d: run weft as root or as the JVM's user", p.uid, os.Geteuid())
		}
		as = self()
	}

	root, err := os.OpenRoot(fmt.Sprintf("/proc/%d/root", pid))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrNoProcess
		}
		return fmt.Errorf("open the JVM's root: %w", err)
	}
	defer root.Close()
	// os.Root keeps links inside the JVM's filesystem from leading weft,
	// as root, to files of the host.
	tmp, err := root.OpenRoot("tmp")
	if err != nil {
		return fmt.Errorf("open the JVM's /tmp: %w", err)
	}
	defer tmp.Close()

	jar, cleanup, err := placeJar(opts.JarPath, opts.AgentArgs, p, as, tmp)
	if err != nil {
		return err
	}
	// Once loaded, the JVM keeps the jar open: a copy can go right away.
	defer cleanup()
	log.Debug("agent jar for the JVM", "path", jar)
	option := jar
	if opts.AgentArgs != "" {
		option += "=" + opts.AgentArgs
	}
	if len(option) > maxArgLen {
		return fmt.Errorf("the agent's path and arguments take %d bytes, the attach protocol carries at most %d", len(option), maxArgLen)
	}
	req, err := encodeRequest("load", "instrument", "false", option)
	if err != nil {
		return err
	}

	conn, err := connect(ctx, p, as, tmp, opts.SocketTimeout, log)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(opts.ReplyTimeout)); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	reply, err := exchange(conn, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || err == nil && len(reply) == 0:
		// HotSpot closes on a peer it does not accept, without a word.
		return fmt.Errorf("the JVM closed the connection without replying; it takes requests only from uid %d gid %d or root", p.uid, p.gid)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("no reply within %v: agentmain has not returned", opts.ReplyTimeout)
	case err != nil:
		return fmt.Errorf("load request: %w", err)
	}
	log.Debug("load reply", "reply", truncate(strings.TrimSpace(string(reply))))
	return parseLoadReply(reply)
}

// exchange sends one request and reads the reply up to the JVM's close.
func exchange(conn io.ReadWriter, req []byte) ([]byte, error) {
	if _, err := conn.Write(req); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	reply, err := io.ReadAll(io.LimitReader(conn, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	return reply, nil
}

// errNotListening: no socket yet, or a stale one nobody accepts on.
var errNotListening = errors.New("not listening")

// connect connects to the JVM's attach socket, first starting the attach
// listener if it is not running yet.
func connect(ctx context.Context, p process, as identity, tmp *os.Root, timeout time.Duration, log *slog.Logger) (net.Conn, error) {
	dir, err := tmp.Open(".")
	if err != nil {
		return nil, fmt.Errorf("open the JVM's /tmp: %w", err)
	}
	defer dir.Close()
	sock := fmt.Sprintf(".java_pid%d", p.nspid)

	start := time.Now()
	deadline := start.Add(timeout)
	delay := 20 * time.Millisecond
	var trig *trigger
	defer func() { trig.remove(as, log) }()
	signals := 0
	for {
		c, err := tryConnect(dir, sock, p, as)
		if err == nil {
			log.Debug("connected to the attach socket", "signals", signals, "after", time.Since(start))
			return c, nil
		}
		if !errors.Is(err, errNotListening) {
			return nil, err
		}
		// Refresh: the process may have exited, or installed its signal
		// handlers meanwhile.
		if p, err = readProcess(p.pid); err != nil {
			return nil, err
		}
		// A JVM that does not catch SIGQUIT yet (it is still starting) would
		// die of it, so it is only sent once the handler is in place. The
		// second one, halfway, covers a signal that went unnoticed, as the
		// JDK's own client does.
		if p.quitCaught && (signals == 0 || signals == 1 && time.Since(start) > timeout/2) {
			if trig == nil {
				if trig, err = createTrigger(p, as, tmp, log); err != nil {
					return nil, err
				}
			}
			if err := unix.Kill(p.pid, unix.SIGQUIT); err != nil {
				if errors.Is(err, syscall.ESRCH) {
					return nil, ErrNoProcess
				}
				return nil, fmt.Errorf("send SIGQUIT: %w", err)
			}
			signals++
			log.Debug("sent SIGQUIT to start the attach listener")
		}
		now := time.Now()
		if !now.Before(deadline) {
			if signals == 0 {
				return nil, fmt.Errorf("%w within %v and does not handle SIGQUIT (still starting up, or run with -Xrs), so it was not signalled", ErrTimeout, timeout)
			}
			return nil, fmt.Errorf("%w within %v; is -XX:+DisableAttachMechanism set?", ErrTimeout, timeout)
		}
		wait := min(delay, deadline.Sub(now))
		delay = min(delay*2, 500*time.Millisecond)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// tryConnect connects to the socket sock in dir, the JVM's /tmp. The socket
// is opened with O_PATH|O_NOFOLLOW and connected through /proc/self/fd, so
// the checked file is the one connected to: a link planted in the JVM's
// /tmp cannot redirect the connect to a socket of the host.
func tryConnect(dir *os.File, sock string, p process, as identity) (net.Conn, error) {
	fd, err := unix.Openat(int(dir.Fd()), sock, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, errNotListening
		}
		return nil, fmt.Errorf("open attach socket: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat attach socket: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("/tmp/%s in the JVM's filesystem is not a socket (mode %#o)", sock, st.Mode)
	}
	// The JVM makes its socket its own; another owner means someone else
	// put it there to receive the request.
	if int(st.Uid) != p.uid {
		return nil, fmt.Errorf("/tmp/%s is owned by uid %d, not by the JVM's uid %d", sock, st.Uid, p.uid)
	}
	c, err := dialAs(fmt.Sprintf("/proc/self/fd/%d", fd), as)
	if err != nil {
		// Refused: the file outlived its listener. Again: backlog full.
		if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.EAGAIN) {
			return nil, errNotListening
		}
		return nil, fmt.Errorf("connect to /tmp/%s: %w", sock, err)
	}
	return c, nil
}

// trigger is the .attach_pid file that tells the JVM SIGQUIT means attach.
type trigger struct {
	dir   *os.Root
	name  string
	close bool // dir was opened for the trigger
}

// createTrigger creates .attach_pid<nspid> in the JVM's working directory,
// or in its /tmp when the former is not writable, as the JVM's user: the
// JVM ignores a trigger owned by anyone but itself or root, and weft's root
// is nobody inside a user namespace.
func createTrigger(p process, as identity, tmp *os.Root, log *slog.Logger) (*trigger, error) {
	name := fmt.Sprintf(".attach_pid%d", p.nspid)
	cwd, err := os.OpenRoot(fmt.Sprintf("/proc/%d/cwd", p.pid))
	if err == nil {
		if err = writeTrigger(cwd, name, as); err == nil {
			log.Debug("created attach trigger in the JVM's working directory")
			return &trigger{dir: cwd, name: name, close: true}, nil
		}
		cwd.Close()
	}
	log.Debug("cannot create attach trigger in the JVM's working directory, using /tmp", "err", err)
	if err := writeTrigger(tmp, name, as); err != nil {
		return nil, fmt.Errorf("create attach trigger: %w", err)
	}
	return &trigger{dir: tmp, name: name}, nil
}

func writeTrigger(dir *os.Root, name string, as identity) error {
	return asIdentity(as, func() error {
		f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			// Left over, or planted by another user: replace it.
			if err := dir.Remove(name); err != nil {
				return err
			}
			f, err = dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if err != nil {
			return err
		}
		return f.Close()
	})
}

func (t *trigger) remove(as identity, log *slog.Logger) {
	if t == nil {
		return
	}
	err := asIdentity(as, func() error { return t.dir.Remove(t.name) })
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("cannot remove attach trigger", "name", t.name, "err", err)
	}
	if t.close {
		t.dir.Close()
	}
}
