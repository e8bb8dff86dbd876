package procinfo

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestServiceNameRules(t *testing.T) {
	cases := []struct {
		name string
		proc fakeProc
		want string
	}{
		{
			name: "OTEL_SERVICE_NAME wins",
			proc: fakeProc{comm: "app", exe: "/usr/bin/app", env: []string{
				"PATH=/bin", "OTEL_RESOURCE_ATTRIBUTES=service.name=from-attrs", "OTEL_SERVICE_NAME=checkout",
			}},
			want: "checkout",
		},
		{
			name: "service.name from OTEL_RESOURCE_ATTRIBUTES",
			proc: fakeProc{comm: "app", exe: "/usr/bin/app", env: []string{"OTEL_RESOURCE_ATTRIBUTES=team=a,service.name=pay%20ments"}},
			want: "pay ments",
		},
		{
			name: "blank OTEL_SERVICE_NAME is ignored",
			proc: fakeProc{comm: "app", exe: "/usr/bin/app", env: []string{"OTEL_SERVICE_NAME= "}},
			want: "app",
		},
		{
			name: "jvm -jar",
			proc: fakeProc{comm: "java", exe: "/usr/lib/jvm/bin/java", args: []string{"java", "-Xmx1g", "-Dspring.profiles.active=prod", "-jar", "/opt/app/orders-1.2.jar", "--port", "80"}},
			want: "orders-1.2",
		},
		{
			name: "jvm main class after class path",
			proc: fakeProc{comm: "java", exe: "/usr/lib/jvm/bin/java", args: []string{"java", "-cp", "a.jar:b.jar", "-XX:+UseG1GC", "com.example.FooKt", "arg"}},
			want: "FooKt",
		},
		{
			name: "jvm module",
			proc: fakeProc{comm: "java", exe: "/usr/lib/jvm/bin/java", args: []string{"java", "--module-path", "mods", "-m", "com.shop/com.shop.cart.CartServer"}},
			want: "CartServer",
		},
		{
			name: "jvm without main falls back to exe",
			proc: fakeProc{comm: "java", exe: "/usr/lib/jvm/bin/java", args: []string{"java", "-version"}},
			want: "java",
		},
		{
			name: "executable name",
			proc: fakeProc{comm: "nginx: worker", exe: "/usr/sbin/nginx", args: []string{"nginx: worker process"}},
			want: "nginx",
		},
		{
			name: "deleted executable",
			proc: fakeProc{comm: "api", exe: "/srv/api-server (deleted)"},
			want: "api-server",
		},
		{
			name: "comm when exe is unreadable",
			proc: fakeProc{comm: "kworker/0:1"},
			want: "kworker/0:1",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, root := newTestResolver(t, Config{})
			c.proc.start = 100
			writeProc(t, root, 42, c.proc)
			res, name := r.Resolve(42)
			if name != c.want {
				t.Fatalf("service name = %q, want %q", name, c.want)
			}
			if got := attrMap(res)["service.name"].AsString(); got != c.want {
				t.Fatalf("resource service.name = %q, want %q", got, c.want)
			}
		})
	}
}

func TestResourceAttributes(t *testing.T) {
	r, root := newTestResolver(t, Config{Version: "0.3.0"})
	writeProc(t, root, 42, fakeProc{
		comm: "java", ppid: 1, start: 100, exe: "/usr/lib/jvm/bin/java", uid: "0",
		args: []string{"java", "-Ddb.password=hunter2", "-jar", "shop.jar"},
		env: []string{
			"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=prod, team = a%2Cb ,host.name=override,broken,=x",
		},
	})
	res, _ := r.Resolve(42)
	got := attrMap(res)

	wantOwner := "0"
	if u, err := user.LookupId("0"); err == nil {
		wantOwner = u.Username
	}
	wantStr := map[string]string{
		"service.name":                "shop",
		"process.executable.name":     "java",
		"process.executable.path":     "/usr/lib/jvm/bin/java",
		"process.owner":               wantOwner,
		"process.runtime.name":        "java",
		"os.type":                     "linux",
		"host.id":                     "0123456789abcdef0123456789abcdef",
		"host.name":                   "override",
		"telemetry.distro.name":       "weft",
		"telemetry.distro.version":    "0.3.0",
		"deployment.environment.name": "prod",
		"team":                        "a,b",
	}
	for k, want := range wantStr {
		if v := got[k].AsString(); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if v := got["process.pid"].AsInt64(); v != 42 {
		t.Errorf("process.pid = %d", v)
	}
	if v := got["process.parent_pid"].AsInt64(); v != 1 {
		t.Errorf("process.parent_pid = %d", v)
	}
	wantArgs := []string{"java", "-Ddb.password=REDACTED", "-jar", "shop.jar"}
	if v := got["process.command_args"].AsStringSlice(); !slices.Equal(v, wantArgs) {
		t.Errorf("process.command_args = %q, want %q", v, wantArgs)
	}
	for k := range got {
		if strings.HasPrefix(k, "telemetry.sdk.") || k == "broken" || k == "" {
			t.Errorf("unexpected attribute %q", k)
		}
	}
	if res.SchemaURL() == "" {
		t.Error("resource has no schema URL")
	}
}

func TestPIDReuseInvalidatesCache(t *testing.T) {
	r, root := newTestResolver(t, Config{})
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	writeProc(t, root, 7, fakeProc{comm: "old", start: 100, exe: "/bin/old", env: []string{"OTEL_SERVICE_NAME=first"}})
	if _, name := r.Resolve(7); name != "first" {
		t.Fatalf("name = %q", name)
	}

	// Same process, changed environ file: the cached identity is kept,
	// which shows the cache is used.
	writeProc(t, root, 7, fakeProc{comm: "old", start: 100, exe: "/bin/old", env: []string{"OTEL_SERVICE_NAME=changed"}})
	if _, name := r.Resolve(7); name != "first" {
		t.Fatalf("cached name = %q, want first", name)
	}

	// The pid now belongs to a new process (different start time). Within
	// the revalidation interval the cached identity stands; after it, the
	// new process is seen.
	writeProc(t, root, 7, fakeProc{comm: "new", start: 200, exe: "/bin/new"})
	if _, name := r.Resolve(7); name != "first" {
		t.Fatalf("revalidated before the interval: %q", name)
	}
	now = now.Add(defaultRevalidate + time.Second)
	res, name := r.Resolve(7)
	if name != "new" {
		t.Fatalf("after reuse name = %q, want new", name)
	}
	if got := attrMap(res)["process.executable.path"].AsString(); got != "/bin/new" {
		t.Fatalf("after reuse exe = %q", got)
	}
}

func TestExecInvalidatesCache(t *testing.T) {
	r, root := newTestResolver(t, Config{})
	writeProc(t, root, 7, fakeProc{comm: "sh", start: 100, exe: "/bin/sh"})
	if _, name := r.Resolve(7); name != "sh" {
		t.Fatalf("name = %q", name)
	}
	// exec keeps pid and start time but replaces the executable.
	writeProc(t, root, 7, fakeProc{comm: "java", start: 100, exe: "/usr/bin/java", args: []string{"java", "-jar", "svc.jar"}})
	r.Invalidate(7) // weft does this on the exec event
	if _, name := r.Resolve(7); name != "svc" {
		t.Fatalf("after exec name = %q, want svc", name)
	}
}

func TestExitedProcessKeepsIdentity(t *testing.T) {
	r, root := newTestResolver(t, Config{})
	writeProc(t, root, 9, fakeProc{comm: "api", start: 100, exe: "/bin/api"})
	r.Resolve(9)
	removeProc(t, root, 9)
	if _, name := r.Resolve(9); name != "api" {
		t.Fatalf("name after exit = %q, want api", name)
	}
}

func TestVanishedProcess(t *testing.T) {
	r, root := newTestResolver(t, Config{MissingTTL: time.Minute})
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }

	res, name := r.Resolve(31337)
	if name != "unknown_service:31337" {
		t.Fatalf("name = %q", name)
	}
	got := attrMap(res)
	if got["process.pid"].AsInt64() != 31337 || got["host.name"].AsString() != "node-1" {
		t.Fatalf("unexpected attributes %v", res.Attributes())
	}

	// Only comm is readable: it names the unknown service once the
	// remembered answer has expired.
	dir := filepath.Join(root, "31337")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte("worker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, name := r.Resolve(31337); name != "unknown_service:31337" {
		t.Fatalf("within TTL name = %q", name)
	}
	now = now.Add(2 * time.Minute)
	if _, name := r.Resolve(31337); name != "unknown_service:worker" {
		t.Fatalf("after TTL name = %q", name)
	}

	// The process becomes visible: it is resolved at once, TTL or not.
	writeProc(t, root, 31337, fakeProc{comm: "worker", start: 5, exe: "/bin/worker"})
	if _, name := r.Resolve(31337); name != "worker" {
		t.Fatalf("after appearing name = %q", name)
	}
}

func TestCacheIsBounded(t *testing.T) {
	r, root := newTestResolver(t, Config{CacheSize: 3})
	for pid := uint32(1); pid <= 10; pid++ {
		writeProc(t, root, pid, fakeProc{comm: "p" + strconv.Itoa(int(pid)), start: 1, exe: "/bin/p"})
		r.Resolve(pid)
	}
	if n := r.cache.Len(); n != 3 {
		t.Fatalf("cache holds %d entries, want 3", n)
	}
}

func TestCurrentProcess(t *testing.T) {
	r, err := NewResolver(Config{})
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	res, name := r.Resolve(uint32(pid))

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Base(exe)
	if n := os.Getenv("OTEL_SERVICE_NAME"); n != "" {
		want = n
	}
	if name != want {
		t.Fatalf("service name = %q, want %q", name, want)
	}
	got := attrMap(res)
	if got["process.pid"].AsInt64() != int64(pid) {
		t.Errorf("process.pid = %v", got["process.pid"].AsInt64())
	}
	if got["process.parent_pid"].AsInt64() != int64(os.Getppid()) {
		t.Errorf("process.parent_pid = %v, want %d", got["process.parent_pid"].AsInt64(), os.Getppid())
	}
	if got["process.executable.path"].AsString() != exe {
		t.Errorf("process.executable.path = %q, want %q", got["process.executable.path"].AsString(), exe)
	}
	if len(got["process.command_args"].AsStringSlice()) == 0 {
		t.Error("no process.command_args")
	}
	if got["process.owner"].AsString() == "" {
		t.Error("no process.owner")
	}
}
