package nodeagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The companion loads in plain Node.js, twice without harm, and leaves
// http.get and http2.connect working and named as before.
func TestScriptLoads(t *testing.T) {
	node, path := nodeAndScript(t)
	const check = `require(process.argv[1]); require(process.argv[1]);
const http = require('http');
console.log(globalThis[Symbol.for('weft.node.companion')], http.get.name, http.request.name, typeof http.get,
  require('http2').connect.name);`
	out, err := exec.Command(node, "-e", check, path).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "true get request function connect" {
		t.Errorf("got %q", got)
	}
}

// With the companion, an HTTP/2 session's requests, made before and after
// it connects, are answered as before.
func TestScriptKeepsHTTP2Working(t *testing.T) {
	node, path := nodeAndScript(t)
	const check = `require(process.argv[1]);
const http2 = require('http2');
const server = http2.createServer();
server.on('stream', (s, h) => { s.respond({ ':status': 200 }); s.end(h[':path']); });
server.listen(0, '127.0.0.1', () => {
  const session = http2.connect('http://127.0.0.1:' + server.address().port);
  const get = (path) => new Promise((resolve) => {
    const req = session.request({ ':path': path });
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { body += d; });
    req.on('end', () => resolve(body));
  });
  const early = get('/early');
  session.on('connect', async () => {
    console.log(await early, await get('/late'), session.request.name);
    session.close();
    server.close();
  });
});`
	out, err := exec.Command(node, "-e", check, path).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "/early /late request" {
		t.Errorf("got %q", got)
	}
}

// nodeAndScript returns the machine's node and the companion written to a
// temporary file.
func nodeAndScript(t *testing.T) (node, path string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node, which the project's machines have, is missing")
	}
	path = filepath.Join(t.TempDir(), "weft-node.js")
	if err := os.WriteFile(path, Script(), 0o644); err != nil {
		t.Fatal(err)
	}
	return node, path
}
