package config

import (
	"flag"
	"fmt"
	"strconv"
)

// Kubernetes configures the pod metadata weft adds to the resources of
// processes in pods (k8s.* attributes, service.name from the pod).
type Kubernetes struct {
	// Enabled is auto (on when running in a pod: KUBERNETES_SERVICE_HOST
	// is set), on or off.
	Enabled string `yaml:"enabled"`
	// NodeName is the node whose pods are watched; the DaemonSet sets
	// NODE_NAME from spec.nodeName. Empty: the host name.
	NodeName string `yaml:"node_name"`
	// WellKnownLabels also names services after the app.kubernetes.io/
	// instance, name and version labels; off by default, as OpenTelemetry's
	// conventions ask (users may not know their labels are read so).
	WellKnownLabels bool `yaml:"well_known_labels"`
}

func defaultKubernetes() Kubernetes { return Kubernetes{Enabled: "auto"} }

// On reports whether the pod metadata source runs, with getenv telling
// whether weft runs in a pod.
func (k Kubernetes) On(getenv func(string) string) bool {
	return k.Enabled == "on" || (k.Enabled == "auto" && getenv("KUBERNETES_SERVICE_HOST") != "")
}

func (k Kubernetes) validate() error {
	switch k.Enabled {
	case "auto", "on", "off":
		return nil
	}
	return fmt.Errorf("kubernetes.enabled %q: want auto, on or off", k.Enabled)
}

// applyKubernetesEnv reads WEFT_KUBERNETES* and the node name (see
// applyEnv); WEFT_NODE_NAME wins over the downward API's usual NODE_NAME.
func applyKubernetesEnv(k *Kubernetes, set func(string, func(string) error)) {
	set("WEFT_KUBERNETES", func(v string) error { k.Enabled = v; return nil })
	set("NODE_NAME", func(v string) error { k.NodeName = v; return nil })
	set("WEFT_NODE_NAME", func(v string) error { k.NodeName = v; return nil })
	set("WEFT_KUBERNETES_WELL_KNOWN_LABELS", func(v string) (e error) { k.WellKnownLabels, e = strconv.ParseBool(v); return })
}

// kubernetesFlags are --kubernetes, --kube-node-name and
// --kube-well-known-labels.
type kubernetesFlags struct {
	enabled, node string
	labels        bool
}

func (f *kubernetesFlags) register(fs *flag.FlagSet, d Kubernetes) {
	fs.StringVar(&f.enabled, "kubernetes", d.Enabled, "add the pod's metadata (k8s.*, service.name) to processes in pods: auto (when in a pod), on or off")
	fs.StringVar(&f.node, "kube-node-name", "", "the Kubernetes node whose pods are watched (default: $NODE_NAME, else the host name)")
	fs.BoolVar(&f.labels, "kube-well-known-labels", false, "also derive service.name and service.version from the app.kubernetes.io/ labels")
}

// apply copies the flag called name, if it is one of these, into k.
func (f *kubernetesFlags) apply(k *Kubernetes, name string) {
	switch name {
	case "kubernetes":
		k.Enabled = f.enabled
	case "kube-node-name":
		k.NodeName = f.node
	case "kube-well-known-labels":
		k.WellKnownLabels = f.labels
	}
}
