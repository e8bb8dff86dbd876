package nodeagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The companion loads in plain Node.js, twice without harm, and leaves
// http.get working and named as before.
func TestScriptLoads(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node, which the project's machines have, is missing")
	}
	path := filepath.Join(t.TempDir(), "weft-node.js")
	if err := os.WriteFile(path, Script(), 0o644); err != nil {
		t.Fatal(err)
	}
	const check = `require(process.argv[1]); require(process.argv[1]);
const http = require('http');
console.log(globalThis[Symbol.for('weft.node.companion')], http.get.name, http.request.name, typeof http.get);`
	out, err := exec.Command(node, "-e", check, path).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "true get request function" {
		t.Errorf("got %q", got)
	}
}
