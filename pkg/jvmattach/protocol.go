package jvmattach

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// HotSpot's attach protocol, version 1, which every HotSpot since JDK 6
// speaks (recent ones also have a version 2, which a client must ask for):
//
//	request:  "1" NUL <command> NUL <arg0> NUL <arg1> NUL <arg2> NUL
//	reply:    <status> "\n" <output>
//
// A request carries exactly three arguments, empty ones as a bare NUL. The
// JVM closes the connection once it has written the reply.
const (
	protocolVersion = "1"
	argCount        = 3
	// maxArgLen is HotSpot's arg_length_max: a longer argument makes the
	// JVM drop the request without a reply.
	maxArgLen = 1024
	// statusBadVersion is what the JVM replies to a protocol version it
	// does not know.
	statusBadVersion = 101
)

// encodeRequest builds one request.
func encodeRequest(cmd string, args ...string) ([]byte, error) {
	if len(args) > argCount {
		return nil, fmt.Errorf("%s: %d arguments, the protocol carries %d", cmd, len(args), argCount)
	}
	var b bytes.Buffer
	b.WriteString(protocolVersion)
	b.WriteByte(0)
	b.WriteString(cmd)
	b.WriteByte(0)
	for i := range argCount {
		var a string
		if i < len(args) {
			a = args[i]
		}
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("%s: argument %d contains a NUL byte", cmd, i)
		}
		if len(a) > maxArgLen {
			return nil, fmt.Errorf("%s: argument %d is %d bytes, HotSpot accepts at most %d", cmd, i, len(a), maxArgLen)
		}
		b.WriteString(a)
		b.WriteByte(0)
	}
	return b.Bytes(), nil
}

// loadRefused is a load request the JVM failed with an error status.
type loadRefused struct {
	status int
	msg    string
}

func (e *loadRefused) Error() string {
	return fmt.Sprintf("the JVM could not load the agent (status %d): %s", e.status, truncate(e.msg))
}

// tooEarly: a JVM caught in its first milliseconds (it handles SIGQUIT
// before its system class loader exists) fails the load with a bare
// NullPointerException, before any of the agent has run.
func (e *loadRefused) tooEarly() bool { return e.msg == "java.lang.NullPointerException" }

// AgentError is an agent the JVM loaded but could not start: its jar has no
// Agent-Class, or agentmain is missing or threw.
type AgentError struct {
	Code int // what the instrument library's Agent_OnAttach returned
}

// Codes of the JDK's instrument library (the JPLIS agent) for a dynamic load.
const (
	codeNoMemory  = -4  // JNI_ENOMEM
	codeBadJar    = 100 // jar not found or without Agent-Class
	codeNotOnCP   = 101 // jar could not be added to the system class path
	codeStartFail = 102 // agentmain missing or threw
)

func (e *AgentError) Error() string {
	var why string
	switch e.Code {
	case codeNoMemory:
		why = "the JVM ran out of memory"
	case codeBadJar:
		why = "the jar was not found or its manifest has no Agent-Class"
	case codeNotOnCP:
		why = "the jar could not be added to the system class path"
	case codeStartFail:
		why = "agentmain is missing or threw an exception (the JVM printed the stack trace on its stderr)"
	default:
		why = "unknown reason"
	}
	return fmt.Sprintf("agent failed to start in the JVM (code %d): %s", e.Code, why)
}

// parseLoadReply interprets the JVM's reply to a load command.
func parseLoadReply(reply []byte) error {
	s := string(reply)
	line, rest, ok := strings.Cut(s, "\n")
	if !ok {
		if s == "" {
			return errors.New("the JVM closed the connection without a reply")
		}
		return fmt.Errorf("malformed reply %q", truncate(s))
	}
	status, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return fmt.Errorf("malformed reply status %q", truncate(line))
	}
	msg := strings.TrimSpace(rest)
	if status != 0 {
		if status == statusBadVersion && msg == "" {
			return errors.New("the JVM does not speak attach protocol version 1")
		}
		if msg == "" {
			msg = "no message"
		}
		return &loadRefused{status: status, msg: msg}
	}
	// The load itself went through; the first line is the return code of
	// Agent_OnAttach: "return code: N" since JDK 9, a bare "N" before.
	first, _, _ := strings.Cut(msg, "\n")
	first = strings.TrimSpace(first)
	num := strings.TrimPrefix(first, "return code:")
	code, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		if msg == "" {
			return errors.New("the JVM sent an empty reply")
		}
		return fmt.Errorf("the JVM could not load the agent: %s", truncate(msg))
	}
	if code != 0 {
		return &AgentError{Code: code}
	}
	return nil
}

// truncate keeps an error message from the JVM readable.
func truncate(s string) string {
	const max = 512
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
