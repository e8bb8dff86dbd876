package kube

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/weftdev/weft/pkg/procinfo"
)

const (
	checkoutCID = "4f2a9c1b7e3d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"
	checkoutUID = "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d"
	nightlyCID  = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	nightlyUID  = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
)

func controller(kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes}}
}

// checkoutPod is a Deployment's pod, running.
func checkoutPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "checkout-7d9f8c6b5-x2x9q", Namespace: "shop", UID: checkoutUID,
			Labels:          map[string]string{"pod-template-hash": "7d9f8c6b5", labelName: "checkout-app"},
			OwnerReferences: controller("ReplicaSet", "checkout-7d9f8c6b5"),
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "shop/checkout:1.4.2"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://" + checkoutCID},
		}},
	}
}

// nightlyPod is a CronJob's, with its service named by annotation.
func nightlyPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "nightly-28901-abcde", Namespace: "batch", UID: nightlyUID,
			Annotations:     map[string]string{"resource.opentelemetry.io/service.name": "report-builder"},
			OwnerReferences: controller("Job", "nightly-28901"),
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "job", Image: "report"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "job", ContainerID: "cri-o://" + nightlyCID},
		}},
	}
}

func podCgroup(uid, cid string) string {
	return "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") +
		".slice/cri-containerd-" + cid + ".scope\n"
}

// writeProc creates a minimal /proc/<pid> for procinfo.
func writeProc(t *testing.T, root string, pid int, comm, cgroup string, env ...string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"stat":    fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 100 1000 100 0\n", pid, comm, pid, pid),
		"comm":    comm + "\n",
		"cmdline": comm + "\x00",
		"environ": strings.Join(env, "\x00"),
		"cgroup":  cgroup,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newResolver(t *testing.T, meta procinfo.Metadata) (*procinfo.Resolver, string) {
	t.Helper()
	root := t.TempDir()
	r, err := procinfo.NewResolver(procinfo.Config{
		ProcRoot: root, MachineIDPath: filepath.Join(root, "machine-id"), HostName: "node-1",
		Metadata: meta, Revalidate: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, root
}

func startSource(t *testing.T, rc *rest.Config, log *slog.Logger, timeout time.Duration) *Source {
	t.Helper()
	s, err := New(Config{NodeName: "node-1", REST: rc, Log: log, SyncTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.Start(ctx)
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func attrMap(res *resource.Resource) map[string]string {
	m := map[string]string{}
	for _, kv := range res.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// A process whose cgroup names a pod's container gets the pod's identity
// through procinfo, its workload found through the API.
func TestProcessInPod(t *testing.T) {
	api := newFakeAPI(t)
	api.addPod(checkoutPod())
	api.addPod(nightlyPod())
	api.addObject("replicasets", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Name: "checkout-7d9f8c6b5", Namespace: "shop", OwnerReferences: controller("Deployment", "checkout")}})
	api.addObject("jobs", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: "nightly-28901", Namespace: "batch", OwnerReferences: controller("CronJob", "nightly")}})
	src := startSource(t, api.rest(), nil, 0)
	waitFor(t, "the pods", func() bool {
		_, a := src.Pod(checkoutCID, "")
		_, b := src.Pod(nightlyCID, "")
		return a && b
	})

	r, root := newResolver(t, src)
	writeProc(t, root, 10, "checkout", podCgroup(checkoutUID, checkoutCID))
	writeProc(t, root, 11, "report", podCgroup(nightlyUID, nightlyCID))
	writeProc(t, root, 12, "checkout", podCgroup(checkoutUID, checkoutCID), "OTEL_SERVICE_NAME=own-name")
	writeProc(t, root, 13, "sshd", "0::/system.slice/sshd.service\n")

	res, name := r.Resolve(10)
	got := attrMap(res)
	want := map[string]string{
		"service.name":        "checkout",
		"service.namespace":   "shop",
		"service.version":     "1.4.2",
		"service.instance.id": "shop.checkout-7d9f8c6b5-x2x9q.app",
		"container.id":        checkoutCID,
		"k8s.pod.uid":         checkoutUID,
		"k8s.pod.name":        "checkout-7d9f8c6b5-x2x9q",
		"k8s.namespace.name":  "shop",
		"k8s.node.name":       "node-1",
		"k8s.container.name":  "app",
		"k8s.replicaset.name": "checkout-7d9f8c6b5",
		"k8s.deployment.name": "checkout",
	}
	if name != "checkout" {
		t.Errorf("service name %q, want checkout (the deployment; labels are opt-in)", name)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}

	res, name = r.Resolve(11)
	got = attrMap(res)
	if name != "report-builder" || got["k8s.job.name"] != "nightly-28901" || got["k8s.cronjob.name"] != "nightly" || got["k8s.container.name"] != "job" {
		t.Errorf("cronjob pod: service %q, attributes %v", name, got)
	}

	if _, name := r.Resolve(12); name != "own-name" {
		t.Errorf("OTEL_SERVICE_NAME lost to the pod: %q", name)
	}
	res, name = r.Resolve(13)
	if got := attrMap(res); name != "sshd" || got["k8s.pod.name"] != "" || got["container.id"] != "" {
		t.Errorf("host process: service %q, attributes %v", name, got)
	}

	api.mu.Lock()
	defer api.mu.Unlock()
	for _, sel := range api.selectors {
		if sel != "spec.nodeName=node-1" {
			t.Errorf("pods asked for with field selector %q, want spec.nodeName=node-1", sel)
		}
	}
	if len(api.gets) != 2 {
		t.Errorf("owner lookups %v, want one per ReplicaSet and Job", api.gets)
	}
}

// A pod that appears after its process was first resolved (weft started
// before the informer synced, or the container started before its status
// said so) reaches the process on a later Resolve.
func TestPodAddedLater(t *testing.T) {
	api := newFakeAPI(t)
	src := startSource(t, api.rest(), nil, 0)
	waitFor(t, "the first list", src.informer.HasSynced)

	r, root := newResolver(t, src)
	writeProc(t, root, 10, "checkout", podCgroup(checkoutUID, checkoutCID))
	res, name := r.Resolve(10)
	if got := attrMap(res); name != "checkout" || got["k8s.pod.name"] != "" || got["container.id"] != checkoutCID {
		t.Fatalf("before the pod: service %q, attributes %v", name, got)
	}

	// No ReplicaSet to GET: the Deployment's name is guessed from the
	// ReplicaSet's.
	api.addPod(checkoutPod())
	waitFor(t, "the pod on the process", func() bool {
		res, _ := r.Resolve(10)
		return attrMap(res)["k8s.pod.name"] == "checkout-7d9f8c6b5-x2x9q"
	})
	if got := attrMap(func() *resource.Resource { res, _ := r.Resolve(10); return res }()); got["k8s.deployment.name"] != "checkout" {
		t.Errorf("deployment %q, want checkout from the ReplicaSet's name", got["k8s.deployment.name"])
	}
	// The API said not found (not failed): the guess is kept for good.
	src.owners.mu.Lock()
	defer src.owners.mu.Unlock()
	if c, ok := src.owners.cache["ReplicaSet/shop/checkout-7d9f8c6b5"]; !ok || !c.expires.IsZero() {
		t.Errorf("owner cache %+v, want the not-found ReplicaSet cached for good", src.owners.cache)
	}
}

// Without the right to read ReplicaSets, weft warns once and takes the
// Deployment's name from the ReplicaSet's, asking again later.
func TestOwnersForbidden(t *testing.T) {
	api := newFakeAPI(t)
	api.forbidden = true
	api.addPod(checkoutPod())
	var logs syncBuffer
	src := startSource(t, api.rest(), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})), 0)
	var info procinfo.PodInfo
	waitFor(t, "the pod", func() (ok bool) { info, ok = src.Pod(checkoutCID, ""); return ok })
	if info.ServiceName != "checkout" {
		t.Errorf("service name %q, want checkout from the ReplicaSet's name", info.ServiceName)
	}
	if !strings.Contains(logs.String(), "check weft's RBAC") {
		t.Errorf("no warning about RBAC; logs:\n%s", logs.String())
	}
	src.owners.mu.Lock()
	defer src.owners.mu.Unlock()
	if c := src.owners.cache["ReplicaSet/shop/checkout-7d9f8c6b5"]; c.expires.IsZero() {
		t.Errorf("a refused lookup cached for good: %+v", c)
	}
}

// syncBuffer is a log sink safe for the informer's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// With the API server unreachable, weft warns and resolves processes
// without Kubernetes attributes.
func TestAPIServerDown(t *testing.T) {
	api := newFakeAPI(t)
	rc := api.rest()
	api.close()

	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	src := startSource(t, rc, log, 200*time.Millisecond)
	waitFor(t, "a warning", func() bool {
		return strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "component=kube")
	})

	r, root := newResolver(t, src)
	writeProc(t, root, 10, "checkout", podCgroup(checkoutUID, checkoutCID))
	res, name := r.Resolve(10)
	got := attrMap(res)
	if name != "checkout" || got["container.id"] != checkoutCID || got["k8s.pod.name"] != "" {
		t.Errorf("service %q, attributes %v", name, got)
	}
	t.Logf("logs:\n%s", logs.String())
}

func TestNotInCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	if _, err := New(Config{NodeName: "node-1"}); err == nil {
		t.Error("New without an in-cluster configuration succeeded")
	}
}
