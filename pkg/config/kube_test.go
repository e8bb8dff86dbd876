package config

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

func TestKubernetesPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.yaml")
	if err := os.WriteFile(path, []byte("kubernetes:\n  enabled: \"off\"\n  node_name: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string, args ...string) Kubernetes {
		t.Helper()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fl := RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, func(k string) string { return env[k] }, fs, fl)
		if err != nil {
			t.Fatal(err)
		}
		return c.Kubernetes
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want Kubernetes
	}{
		{nil, nil, Kubernetes{Enabled: "off", NodeName: "from-file"}},
		{map[string]string{"WEFT_KUBERNETES": "on", "NODE_NAME": "node-a"}, nil, Kubernetes{Enabled: "on", NodeName: "node-a"}},
		{map[string]string{"NODE_NAME": "node-a", "WEFT_NODE_NAME": "node-b", "WEFT_KUBERNETES_WELL_KNOWN_LABELS": "true"}, nil,
			Kubernetes{Enabled: "off", NodeName: "node-b", WellKnownLabels: true}},
		{map[string]string{"NODE_NAME": "node-a"}, []string{"--kubernetes=auto", "--kube-node-name=node-c", "--kube-well-known-labels"},
			Kubernetes{Enabled: "auto", NodeName: "node-c", WellKnownLabels: true}},
	} {
		if got := load(tc.env, tc.args...); got != tc.want {
			t.Errorf("env %v, flags %v: %+v, want %+v", tc.env, tc.args, got, tc.want)
		}
	}
}

func TestKubernetesOn(t *testing.T) {
	inPod := func(k string) string {
		if k == "KUBERNETES_SERVICE_HOST" {
			return "10.96.0.1"
		}
		return ""
	}
	outside := func(string) string { return "" }
	for _, tc := range []struct {
		enabled    string
		inPod, out bool
	}{
		{"auto", true, false},
		{"on", true, true},
		{"off", false, false},
	} {
		k := Kubernetes{Enabled: tc.enabled}
		if k.On(inPod) != tc.inPod || k.On(outside) != tc.out {
			t.Errorf("%s: on in a pod %v, outside %v; want %v, %v", tc.enabled, k.On(inPod), k.On(outside), tc.inPod, tc.out)
		}
	}
	if Default().Kubernetes.Enabled != "auto" {
		t.Errorf("default %q, want auto", Default().Kubernetes.Enabled)
	}
	c := Default()
	c.Kubernetes.Enabled = "yes"
	if err := c.Validate(); err == nil {
		t.Error("kubernetes.enabled=yes passed validation")
	}
}
