package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/test/testcert"
)

// The JVM's TLS, seen in clear through weft's Java agent (jvmtls.h): the
// Spring MVC test app, on JDK 17 and JDK 25, calls websrv over HTTPS with
// every client it has: OkHttp, HttpsURLConnection and Apache's classic
// client on SSLSocket; the JDK's HttpClient, Apache's async client and
// WebClient (Netty) on SSLEngine. Every call is a client span under its
// own request, the first request of each connection the JDK's HttpClient
// opens under the load included (its bytes wait for the handshake and are
// wrapped by the thread that ends it).
func TestTLSJVM(t *testing.T) {
	setup(t)
	buildJava(t)
	dir := t.TempDir()
	cert, key, err := testcert.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"jdk17", "jdk25"} {
		t.Run(name, func(t *testing.T) {
			// The JVM trusts websrv's certificate through its default
			// trust store, which every client uses.
			store := filepath.Join(t.TempDir(), "trust.p12")
			java, err := exec.LookPath(jdks[name])
			if err == nil {
				java, err = filepath.EvalSymlinks(java)
			}
			if err != nil {
				t.Fatal(err)
			}
			keytool := filepath.Join(filepath.Dir(java), "keytool")
			if out, err := exec.Command(keytool, "-importcert", "-noprompt", "-alias", "websrv", "-file", cert,
				"-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit").CombinedOutput(); err != nil {
				t.Fatalf("keytool: %v\n%s", err, out)
			}
			rcv := otlptest.Start(t)
			backend, backAddr := startServer(t, "-mode=nethttp", "-tls", "-cert="+cert, "-key="+key)
			front := startJVMJar(t, jdks[name], "front", testAppJar("spring"),
				[]string{"BACKEND_URL=https://" + backAddr, "WEB_STACK=mvc"},
				"-javaagent:"+agentJar(), "-Djavax.net.ssl.trustStore="+store, "-Djavax.net.ssl.trustStorePassword=changeit")
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
			if !strings.Contains(w.Output(), "the Java agent's TLS hooks") {
				t.Fatalf("the agent's TLS hooks are not attached:\n%s", w.Output())
			}
			app := jvmApp{clients: springClients[:8]}
			routes := app.routes()
			for _, r := range routes {
				numberedLoad(t, front.url+r.path, 40, 8)
			}
			quiesce(rcv, 20*time.Second)
			checkClientParents(t, w, rcv, front, "websrv", "https", routes)
			checkModulesApplied(t, front, "jdk-tls")
			checkTLSTies(t, w, "engines")
		})
	}
}
