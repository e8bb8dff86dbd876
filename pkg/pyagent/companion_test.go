package pyagent

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The companion's decisions, without a kernel: what it announces for a
// request line sent with no incoming request, within a live one, after an
// interim 1xx, and after the response began; and that non-HTTP bytes and
// responses announce nothing.
const decisions = `
a, b = socket.socketpair()
c, d = socket.socketpair()
server, client = T(a), T(c)
def step():
    w._saw_write(client, b"GET /x HTTP/1.1\r\n")
    w._saw_write(client, b"\x16\x03\x01 tls")
    w.begin(server)
    w._saw_write(client, b"POST /y HTTP/1.1\r\n")
    w._saw_write(server, b"HTTP/1.1 100 Continue\r\n\r\n")
    w._saw_write(client, b"GET /z HTTP/1.1\r\n")
    w._saw_write(server, b"HTTP/1.1 200 OK\r\n")
    w._saw_write(client, b"GET /late HTTP/1.1\r\n")
contextvars.copy_context().run(step)
print(" ".join(s[:8] + ":" + str(int(s[8:], 16)) for s in seen), a.fileno(), c.fileno())
`

func TestCompanionDecisions(t *testing.T) {
	f := runCompanion(t, decisions, 6)
	in, cl := f[4], f[5]
	want := []string{"ffffffff:" + cl, padHex(in) + ":" + cl, padHex(in) + ":" + cl, "fffffffe:" + cl}
	if got := f[:4]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("announced %v, want %v", got, want)
	}
}

// companionHarness comes before each script: the companion imported from
// the directory in argv[1], its announcements collected in seen instead of
// made, and T, a transport over a socket.
const companionHarness = `
import asyncio, contextvars, os, socket, sys, types
sys.path.insert(0, sys.argv[1])
import weft_asyncio as w
seen = []
w.os.access = lambda path, mode: seen.append(path[len("/dev/null/weft/"):]) or False

class T:
    def __init__(self, sock): self.sock = sock
    def get_extra_info(self, name): return self.sock if name == "socket" else None
`

// runCompanion runs script after companionHarness, with the companion's
// directory as its argument, and returns the n words it prints.
func runCompanion(t *testing.T, script string, n int) []string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "-c", companionHarness+script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != n {
		t.Fatalf("output: %s", out)
	}
	return f
}

func padHex(dec string) string {
	n, _ := strconv.Atoi(dec)
	return fmt.Sprintf("%08x", n)
}

// httpx's HTTP/2 streams (httpcore's _send_request_headers, here a
// stand-in class): each is announced by its id, with the request the task
// works for, before the wrapped method runs, which still runs and returns.
const h2Streams = `
class AsyncHTTP2Connection:
    async def _send_request_headers(self, request, stream_id):
        seen.append("sent:%d" % stream_id)
        return stream_id

mod = types.ModuleType("httpcore._async.http2")
mod.AsyncHTTP2Connection = AsyncHTTP2Connection
w._patch_httpcore_h2(mod)
w._patch_httpcore_h2(mod)
a, b = socket.socketpair()
server = T(a)
async def main():
    conn = AsyncHTTP2Connection()
    assert await conn._send_request_headers(request=None, stream_id=1) == 1
    w.begin(server)
    assert await conn._send_request_headers(None, 3) == 3
    w._saw_write(server, b"HTTP/1.1 200 OK\r\n")
    await conn._send_request_headers(request=None, stream_id=5)
contextvars.copy_context().run(asyncio.run, main())
print(" ".join(seen), a.fileno())
`

func TestCompanionHTTP2Streams(t *testing.T) {
	f := runCompanion(t, h2Streams, 7)
	in := padHex(f[6])
	want := []string{"h2/ffffffff00000001", "sent:1", "h2/" + in + "00000003", "sent:3", "h2/fffffffe00000005", "sent:5"}
	if got := f[:6]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("announced %v, want %v", got, want)
	}
}
