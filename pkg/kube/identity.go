package kube

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	corev1 "k8s.io/api/core/v1"

	"github.com/weftdev/weft/pkg/procinfo"
)

// The rules below are OpenTelemetry's "Populating resource attributes in
// Kubernetes" (semantic conventions, docs/non-normative/k8s-attributes.md),
// which the OpenTelemetry Operator and the Collector's k8sattributes
// processor also follow:
//
//   - every pod annotation resource.opentelemetry.io/<key> is the resource
//     attribute <key>;
//   - service.name: that annotation, then the well-known labels
//     app.kubernetes.io/instance and app.kubernetes.io/name, then the
//     workload from ancestor to descendant (deployment, replicaset,
//     statefulset, daemonset, cronjob, job), then the pod's name, then the
//     container's;
//   - service.namespace: the annotation, then k8s.namespace.name;
//   - service.version: the annotation, then the label
//     app.kubernetes.io/version, then the container image's tag@digest,
//     digest or tag;
//   - service.instance.id: the annotation, then
//     <namespace>.<pod name>.<container name>.
//
// The specification asks tools to use the well-known labels only when told
// to (users may not know their labels name services): WellKnownLabels.
const (
	annotationPrefix = "resource.opentelemetry.io/"
	labelInstance    = "app.kubernetes.io/instance"
	labelName        = "app.kubernetes.io/name"
	labelVersion     = "app.kubernetes.io/version"
)

// owners are the workloads a pod belongs to, found through owner references.
type owners struct {
	deployment, replicaSet, statefulSet, daemonSet, cronJob, job string
}

// podIdentity is what the resolver is told about one container of a pod;
// container is "" when the process could be placed in the pod only.
func podIdentity(pod *corev1.Pod, container string, own owners, node string, wellKnownLabels bool) procinfo.PodInfo {
	ann := func(key string) string { return strings.TrimSpace(pod.Annotations[annotationPrefix+key]) }
	label := func(key string) string {
		if !wellKnownLabels {
			return ""
		}
		return strings.TrimSpace(pod.Labels[key])
	}
	if pod.Spec.NodeName != "" {
		node = pod.Spec.NodeName
	}

	attrs := []attribute.KeyValue{
		semconv.K8SPodUID(string(pod.UID)),
		semconv.K8SPodName(pod.Name),
		semconv.K8SNamespaceName(pod.Namespace),
	}
	if node != "" {
		attrs = append(attrs, semconv.K8SNodeName(node))
	}
	if container != "" {
		attrs = append(attrs, semconv.K8SContainerName(container))
	}
	for _, w := range []struct {
		name string
		kv   func(string) attribute.KeyValue
	}{
		{own.deployment, semconv.K8SDeploymentName},
		{own.replicaSet, semconv.K8SReplicaSetName},
		{own.statefulSet, semconv.K8SStatefulSetName},
		{own.daemonSet, semconv.K8SDaemonSetName},
		{own.cronJob, semconv.K8SCronJobName},
		{own.job, semconv.K8SJobName},
	} {
		if w.name != "" {
			attrs = append(attrs, w.kv(w.name))
		}
	}

	attrs = append(attrs, semconv.ServiceNamespace(first(ann("service.namespace"), pod.Namespace)))
	if v := first(ann("service.version"), label(labelVersion), imageVersion(containerImage(pod, container))); v != "" {
		attrs = append(attrs, semconv.ServiceVersion(v))
	}
	if id := ann("service.instance.id"); id != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(id))
	} else if container != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(pod.Namespace+"."+pod.Name+"."+container))
	}
	// Any other resource.opentelemetry.io/ annotation, as it is.
	for k, v := range pod.Annotations {
		key, ok := strings.CutPrefix(k, annotationPrefix)
		switch key {
		case "", "service.name", "service.namespace", "service.version", "service.instance.id":
			continue
		}
		if ok {
			attrs = append(attrs, attribute.String(key, v))
		}
	}

	return procinfo.PodInfo{
		ServiceName: first(ann("service.name"), label(labelInstance), label(labelName),
			own.deployment, own.replicaSet, own.statefulSet, own.daemonSet, own.cronJob, own.job,
			pod.Name, container),
		Attributes: attrs,
	}
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func containerImage(pod *corev1.Pod, name string) string {
	if name == "" {
		return ""
	}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return c.Image
			}
		}
	}
	return ""
}

// imageVersion is service.version from an image reference
// ([registry[:port]/]path[:tag][@digest]): tag@digest, else digest, else
// tag.
func imageVersion(image string) string {
	ref, digest, _ := strings.Cut(image, "@")
	tag := ""
	// A colon after the last slash starts the tag; one before it is the
	// registry's port.
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		tag = ref[i+1:]
	}
	switch {
	case tag != "" && digest != "":
		return tag + "@" + digest
	case digest != "":
		return digest
	}
	return tag
}
