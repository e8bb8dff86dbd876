package procinfo

import (
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

const (
	testContainerID = "4f2a9c1b7e3d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"
	testPodUID      = "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d"
	testPodCgroup   = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_4a7b_8c9d_0e1f2a3b4c5d.slice/cri-containerd-" + testContainerID + ".scope\n"
)

// fakeMetadata knows the pods it is given, by container id.
type fakeMetadata struct {
	mu    sync.Mutex
	pods  map[string]PodInfo
	asked []string
}

func (m *fakeMetadata) Pod(containerID, podUID string) (PodInfo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, containerID+"/"+podUID)
	p, ok := m.pods[containerID]
	return p, ok
}

func (m *fakeMetadata) set(containerID string, p PodInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods[containerID] = p
}

func TestContainerID(t *testing.T) {
	for _, c := range []struct {
		name, cgroup, want string
	}{
		{"docker", "0::/system.slice/docker-" + testContainerID + ".scope\n", testContainerID},
		{"kubernetes pod", testPodCgroup, testContainerID},
		{"cgroup v1", "12:memory:/docker/" + testContainerID + "\n1:name=systemd:/docker/" + testContainerID + "\n", testContainerID},
		{"host service", "0::/system.slice/nginx.service\n", ""},
		{"no cgroup file", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, root := newTestResolver(t, Config{})
			writeProc(t, root, 42, fakeProc{comm: "app", exe: "/usr/bin/app", start: 1, cgroup: c.cgroup})
			res, _ := r.Resolve(42)
			v, ok := attrMap(res)["container.id"]
			switch {
			case c.want == "" && ok:
				t.Errorf("container.id = %q, want none", v.AsString())
			case c.want != "" && v.AsString() != c.want:
				t.Errorf("container.id = %q, want %q", v.AsString(), c.want)
			}
		})
	}
}

func TestPodServiceNamePrecedence(t *testing.T) {
	pod := PodInfo{
		ServiceName: "checkout",
		Attributes:  []attribute.KeyValue{attribute.String("k8s.pod.name", "checkout-7d9f-abcde"), attribute.String("service.namespace", "shop")},
	}
	for _, c := range []struct {
		name string
		proc fakeProc
		want string
	}{
		{"pod name over exe", fakeProc{comm: "app", exe: "/usr/bin/app"}, "checkout"},
		{"pod name over jvm main", fakeProc{comm: "java", exe: "/usr/bin/java", args: []string{"java", "-jar", "app.jar"}}, "checkout"},
		{"OTEL_SERVICE_NAME over pod", fakeProc{comm: "app", exe: "/usr/bin/app", env: []string{"OTEL_SERVICE_NAME=mine"}}, "mine"},
		{"OTEL_RESOURCE_ATTRIBUTES over pod", fakeProc{comm: "app", exe: "/usr/bin/app", env: []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=attr"}}, "attr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := &fakeMetadata{pods: map[string]PodInfo{testContainerID: pod}}
			r, root := newTestResolver(t, Config{Metadata: meta})
			c.proc.start, c.proc.cgroup = 1, testPodCgroup
			writeProc(t, root, 42, c.proc)
			res, name := r.Resolve(42)
			attrs := attrMap(res)
			if name != c.want || attrs["service.name"].AsString() != c.want {
				t.Errorf("service name = %q (attribute %q), want %q", name, attrs["service.name"].AsString(), c.want)
			}
			if attrs["k8s.pod.name"].AsString() != "checkout-7d9f-abcde" || attrs["service.namespace"].AsString() != "shop" {
				t.Errorf("pod attributes missing: %v", res.Attributes())
			}
		})
	}
}

func TestPodAttributesYieldToOwnResourceAttributes(t *testing.T) {
	meta := &fakeMetadata{pods: map[string]PodInfo{testContainerID: {
		Attributes: []attribute.KeyValue{attribute.String("service.namespace", "from-k8s")},
	}}}
	r, root := newTestResolver(t, Config{Metadata: meta})
	writeProc(t, root, 42, fakeProc{comm: "app", exe: "/usr/bin/app", start: 1, cgroup: testPodCgroup,
		env: []string{"OTEL_RESOURCE_ATTRIBUTES=service.namespace=own"}})
	res, _ := r.Resolve(42)
	if got := attrMap(res)["service.namespace"].AsString(); got != "own" {
		t.Errorf("service.namespace = %q, want the process's own", got)
	}
}

// The metadata source learns of a pod after its process was resolved: the
// next check of the process picks it up; a process in no container is not
// asked about again.
func TestPodLearntLater(t *testing.T) {
	meta := &fakeMetadata{pods: map[string]PodInfo{}}
	r, root := newTestResolver(t, Config{Metadata: meta})
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	writeProc(t, root, 42, fakeProc{comm: "app", exe: "/usr/bin/app", start: 1, cgroup: testPodCgroup})
	writeProc(t, root, 43, fakeProc{comm: "sshd", exe: "/usr/sbin/sshd", start: 1, cgroup: "0::/system.slice/sshd.service\n"})

	if _, name := r.Resolve(42); name != "app" {
		t.Fatalf("before the pod is known: %q, want app", name)
	}
	r.Resolve(43)
	meta.set(testContainerID, PodInfo{ServiceName: "checkout"})
	if _, name := r.Resolve(42); name != "app" {
		t.Fatalf("within the revalidate interval: %q, want the cached app", name)
	}
	now = now.Add(defaultRevalidate + time.Second)
	res, name := r.Resolve(42)
	if name != "checkout" {
		t.Fatalf("after the pod is known: %q, want checkout", name)
	}
	if attrMap(res)["container.id"].AsString() != testContainerID {
		t.Errorf("container.id lost on rebuild: %v", res.Attributes())
	}
	r.Resolve(43)
	// Known now: not asked about again.
	meta.mu.Lock()
	n := len(meta.asked)
	meta.mu.Unlock()
	now = now.Add(defaultRevalidate + time.Second)
	r.Resolve(42)
	meta.mu.Lock()
	defer meta.mu.Unlock()
	if len(meta.asked) != n {
		t.Errorf("asked again after the pod was known: %v", meta.asked)
	}
	for _, a := range meta.asked {
		if a == "/" {
			t.Errorf("asked about a process in no container: %v", meta.asked)
		}
	}
	if want := testContainerID + "/" + testPodUID; meta.asked[0] != want {
		t.Errorf("asked %q, want %q", meta.asked[0], want)
	}
}
