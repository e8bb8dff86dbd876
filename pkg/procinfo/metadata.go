package procinfo

import "go.opentelemetry.io/otel/attribute"

// Metadata is a source of what an orchestrator knows of a containerised
// process (pkg/kube for Kubernetes). Pod is called when a process's
// identity is built, so it must answer from memory, without I/O.
type Metadata interface {
	// Pod returns what is known of the container containerID in the pod
	// podUID (either may be empty: cgroup paths do not always name
	// both). false means not known (yet): the resolver asks again later.
	Pod(containerID, podUID string) (PodInfo, bool)
}

// PodInfo is a process's identity as its orchestrator sees it.
type PodInfo struct {
	// ServiceName is the service name the orchestrator's metadata
	// implies; the process's own OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES still win over it. Empty: none.
	ServiceName string
	// Attributes are added to the resource (k8s.*, service.namespace…);
	// the process's OTEL_RESOURCE_ATTRIBUTES override them.
	Attributes []attribute.KeyValue
}
