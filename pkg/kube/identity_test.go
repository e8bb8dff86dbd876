package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weftdev/weft/pkg/procinfo"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout-7d9f8c6b5-x2x9q", Namespace: "shop", UID: "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d"},
		Spec: corev1.PodSpec{
			NodeName:   "node-1",
			Containers: []corev1.Container{{Name: "app", Image: "registry.example:5000/shop/checkout:1.4.2"}, {Name: "sidecar", Image: "envoy"}},
		},
	}
}

func attrs(p procinfo.PodInfo) map[string]string {
	m := map[string]string{}
	for _, kv := range p.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func TestServiceNamePrecedence(t *testing.T) {
	deploy := owners{deployment: "checkout", replicaSet: "checkout-7d9f8c6b5"}
	for _, c := range []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		wellKnown   bool
		owners      owners
		container   string
		want        string
	}{
		{name: "annotation first", annotations: map[string]string{"resource.opentelemetry.io/service.name": "ann"},
			labels: map[string]string{labelInstance: "inst", labelName: "nm"}, wellKnown: true, owners: deploy, container: "app", want: "ann"},
		{name: "instance label before name label", labels: map[string]string{labelInstance: "inst", labelName: "nm"}, wellKnown: true, owners: deploy, want: "inst"},
		{name: "name label", labels: map[string]string{labelName: "nm"}, wellKnown: true, owners: deploy, want: "nm"},
		{name: "labels are opt-in", labels: map[string]string{labelInstance: "inst", labelName: "nm"}, owners: deploy, want: "checkout"},
		{name: "deployment before replicaset", owners: deploy, want: "checkout"},
		{name: "bare replicaset", owners: owners{replicaSet: "rs-1"}, want: "rs-1"},
		{name: "statefulset", owners: owners{statefulSet: "db"}, want: "db"},
		{name: "daemonset", owners: owners{daemonSet: "agent"}, want: "agent"},
		{name: "cronjob before job", owners: owners{cronJob: "nightly", job: "nightly-2890"}, want: "nightly"},
		{name: "job", owners: owners{job: "migrate"}, want: "migrate"},
		{name: "bare pod", container: "app", want: "checkout-7d9f8c6b5-x2x9q"},
		{name: "blank annotation ignored", annotations: map[string]string{"resource.opentelemetry.io/service.name": " "}, owners: deploy, want: "checkout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			pod.Annotations, pod.Labels = c.annotations, c.labels
			got := podIdentity(pod, c.container, c.owners, "", c.wellKnown)
			if got.ServiceName != c.want {
				t.Errorf("service name %q, want %q", got.ServiceName, c.want)
			}
		})
	}
	// Nothing else: the container's name.
	pod := testPod()
	pod.Name = ""
	if got := podIdentity(pod, "app", owners{}, "", false).ServiceName; got != "app" {
		t.Errorf("service name %q, want the container's", got)
	}
}

func TestPodAttributes(t *testing.T) {
	pod := testPod()
	pod.Annotations = map[string]string{
		"resource.opentelemetry.io/deployment.environment.name": "prod",
		"resource.opentelemetry.io/team":                        "payments",
		"unrelated":                                             "x",
	}
	got := attrs(podIdentity(pod, "app", owners{deployment: "checkout", replicaSet: "checkout-7d9f8c6b5"}, "other-node", false))
	want := map[string]string{
		"k8s.pod.uid":                 "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d",
		"k8s.pod.name":                "checkout-7d9f8c6b5-x2x9q",
		"k8s.namespace.name":          "shop",
		"k8s.node.name":               "node-1", // the pod's, over the configured one
		"k8s.container.name":          "app",
		"k8s.deployment.name":         "checkout",
		"k8s.replicaset.name":         "checkout-7d9f8c6b5",
		"service.namespace":           "shop",
		"service.version":             "1.4.2",
		"service.instance.id":         "shop.checkout-7d9f8c6b5-x2x9q.app",
		"deployment.environment.name": "prod",
		"team":                        "payments",
	}
	if len(got) != len(want) {
		t.Errorf("attributes %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}

	// Annotations win; without a container there is no instance id.
	pod.Annotations = map[string]string{
		"resource.opentelemetry.io/service.namespace": "payments",
		"resource.opentelemetry.io/service.version":   "v9",
	}
	got = attrs(podIdentity(pod, "", owners{}, "", false))
	if got["service.namespace"] != "payments" || got["service.version"] != "v9" {
		t.Errorf("annotated service.namespace/version: %v", got)
	}
	if _, ok := got["service.instance.id"]; ok {
		t.Errorf("service.instance.id without a container: %v", got)
	}
	if _, ok := got["k8s.container.name"]; ok {
		t.Errorf("k8s.container.name without a container: %v", got)
	}

	// The version label counts only with the well-known labels.
	pod.Annotations = nil
	pod.Labels = map[string]string{labelVersion: "2.0"}
	if v := attrs(podIdentity(pod, "app", owners{}, "", true))["service.version"]; v != "2.0" {
		t.Errorf("service.version %q from the label, want 2.0", v)
	}
	if v := attrs(podIdentity(pod, "app", owners{}, "", false))["service.version"]; v != "1.4.2" {
		t.Errorf("service.version %q without labels, want the image tag", v)
	}
}

func TestImageVersion(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for image, want := range map[string]string{
		"nginx":                                 "",
		"nginx:1.25":                            "1.25",
		"registry.example:5000/shop/checkout":   "",
		"registry.example:5000/shop/checkout:2": "2",
		"nginx@" + digest:                       digest,
		"nginx:1.25@" + digest:                  "1.25@" + digest,
		"":                                      "",
	} {
		if got := imageVersion(image); got != want {
			t.Errorf("imageVersion(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestTrimContainerID(t *testing.T) {
	for in, want := range map[string]string{
		"containerd://ABC123": "abc123",
		"cri-o://abc":         "abc",
		"docker://abc":        "abc",
		"abc":                 "abc",
		"":                    "",
	} {
		if got := trimContainerID(in); got != want {
			t.Errorf("trimContainerID(%q) = %q, want %q", in, got, want)
		}
	}
}
