package qemu

import (
	"regexp"
	"strconv"
	"strings"
)

// consoleTailLines is how much console output an error carries: enough to
// show the last messages of a hung boot.
const consoleTailLines = 40

// crashLines bounds the report of a crash, quoted from its first line.
const crashLines = 150

// crashStart matches the first line of a kernel crash report; quoting from
// there keeps the cause (the BUG/Oops line, the panic reason) that a stack
// dump longer than the tail would push out.
var crashStart = regexp.MustCompile(`(?m)^\[[ \d.]+\] (BUG:|Oops:|general protection fault|Kernel panic|kernel BUG|WARNING:)`)

// parseConsole finds this boot's exit marker and the command output
// between the start and exit markers.
func parseConsole(console, nonce string) (code int, cmdOut string, ok bool) {
	re := regexp.MustCompile(regexp.QuoteMeta(exitMarker+nonce) + `=(\d+)`)
	locs := re.FindAllStringSubmatchIndex(console, -1)
	if len(locs) == 0 {
		return 0, "", false
	}
	last := locs[len(locs)-1]
	code, err := strconv.Atoi(console[last[2]:last[3]])
	if err != nil {
		return 0, "", false
	}
	body := console[:last[0]]
	startLine := startMarker + nonce + "\n"
	if i := strings.Index(body, startLine); i >= 0 {
		body = body[i+len(startLine):]
	}
	// The init script prints a newline before the exit marker.
	return code, strings.TrimSuffix(body, "\n"), true
}

func consoleTail(console string) string {
	if loc := crashStart.FindStringIndex(console); loc != nil {
		lines := strings.Split(strings.TrimRight(console[loc[0]:], "\n"), "\n")
		if len(lines) > crashLines {
			lines = lines[:crashLines]
		}
		return "--- console from the crash on ---\n" + strings.Join(lines, "\n")
	}
	lines := strings.Split(strings.TrimRight(console, "\n"), "\n")
	if len(lines) > consoleTailLines {
		lines = lines[len(lines)-consoleTailLines:]
	}
	return "--- last console lines ---\n" + strings.Join(lines, "\n")
}
