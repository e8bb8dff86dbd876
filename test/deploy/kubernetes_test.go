package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// The Kubernetes API schema comes from the OpenAPI document that the
// Kubernetes source tree ships (api/openapi-spec/swagger.json), taken from
// the k8s.io/kubernetes module through the Go module proxy: pinned by
// version and checked by hash, then read from the module cache, so the test
// runs offline once the module is cached.
const (
	kubernetesModule  = "k8s.io/kubernetes"
	kubernetesVersion = "v1.37.2"
	kubernetesSum     = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
)

// kubernetesManifests are the files validated: every YAML file in
// deploy/kubernetes.
func kubernetesManifests(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, ext := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(repoPath(t, "deploy", "kubernetes", ext))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		t.Fatal("no manifest in deploy/kubernetes")
	}
	sort.Strings(paths)
	return paths
}

type gvk struct{ group, version, kind string }

func (g gvk) String() string {
	if g.group == "" {
		return g.version + ", Kind=" + g.kind
	}
	return g.group + "/" + g.version + ", Kind=" + g.kind
}

type kubeSchemas struct {
	compiler *jsonschema.Compiler
	byGVK    map[gvk]string // definition name
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

var (
	kubeOnce   sync.Once
	kubeLoaded *kubeSchemas
	kubeErr    error
)

func kubernetesSchemas(t *testing.T) *kubeSchemas {
	t.Helper()
	kubeOnce.Do(func() { kubeLoaded, kubeErr = loadKubernetesSchemas() })
	if kubeErr != nil {
		t.Fatal(kubeErr)
	}
	return kubeLoaded
}

// kubernetesOpenAPI returns swagger.json of the pinned Kubernetes release.
func kubernetesOpenAPI() ([]byte, error) {
	// Outside any module, so that this module's go.mod and go.sum stay as
	// they are; the go command verifies a download against the checksum
	// database, and the hash below pins it.
	cmd := exec.Command("go", "mod", "download", "-json", kubernetesModule+"@"+kubernetesVersion)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if info.Error != "" {
		err = errors.New(info.Error)
	}
	if err != nil {
		return nil, fmt.Errorf("go mod download %s@%s (the Kubernetes OpenAPI schema; needs the Go module proxy once): %v\n%s",
			kubernetesModule, kubernetesVersion, err, stderr.String())
	}
	if info.Sum != kubernetesSum {
		return nil, fmt.Errorf("%s@%s has hash %s, want %s", kubernetesModule, kubernetesVersion, info.Sum, kubernetesSum)
	}
	return os.ReadFile(filepath.Join(info.Dir, "api", "openapi-spec", "swagger.json"))
}

const schemaURL = "file:///kubernetes/api/openapi-spec/swagger.json"

func loadKubernetesSchemas() (*kubeSchemas, error) {
	raw, err := kubernetesOpenAPI()
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("swagger.json: %w", err)
	}
	root, _ := doc.(map[string]any)
	defs, _ := root["definitions"].(map[string]any)
	if len(defs) == 0 {
		return nil, errors.New("swagger.json has no definitions")
	}
	// What OpenAPI v2 cannot say: IntOrString takes both forms, and a
	// quantity is a number or a string of the API server's quantity syntax
	// (so 512MB fails as it would in the cluster).
	defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = map[string]any{
		"oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}},
	}
	defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = map[string]any{
		"oneOf": []any{
			map[string]any{"type": "string", "pattern": `^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$`},
			map[string]any{"type": "number"},
		},
	}
	ks := &kubeSchemas{
		compiler: jsonschema.NewCompiler(),
		byGVK:    map[gvk]string{},
		compiled: map[string]*jsonschema.Schema{},
	}
	for name, def := range defs {
		// The API server rejects unknown fields (kubectl's default field
		// validation is strict); the schema does not say so, and a
		// misspelt field is the commonest manifest mistake.
		forbidUnknownFields(def)
		m, _ := def.(map[string]any)
		list, _ := m["x-kubernetes-group-version-kind"].([]any)
		for _, g := range list {
			g, _ := g.(map[string]any)
			group, _ := g["group"].(string)
			version, _ := g["version"].(string)
			kind, _ := g["kind"].(string)
			ks.byGVK[gvk{group, version, kind}] = name
		}
	}
	ks.compiler.DefaultDraft(jsonschema.Draft4)
	if err := ks.compiler.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return ks, nil
}

// forbidUnknownFields sets additionalProperties: false on every object
// schema that lists its properties.
func forbidUnknownFields(node any) {
	m, ok := node.(map[string]any)
	if !ok {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		if _, set := m["additionalProperties"]; !set && m["x-kubernetes-preserve-unknown-fields"] != true {
			m["additionalProperties"] = false
		}
		for _, p := range props {
			forbidUnknownFields(p)
		}
	}
	for _, k := range []string{"additionalProperties", "items"} {
		forbidUnknownFields(m[k])
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[k].([]any)
		for _, s := range list {
			forbidUnknownFields(s)
		}
	}
}

func (ks *kubeSchemas) validate(g gvk, doc []byte) error {
	name, ok := ks.byGVK[g]
	if !ok {
		return fmt.Errorf("%s is no kind of Kubernetes %s", g, kubernetesVersion)
	}
	ks.mu.Lock()
	sch, ok := ks.compiled[name]
	if !ok {
		var err error
		if sch, err = ks.compiler.Compile(schemaURL + "#/definitions/" + name); err != nil {
			ks.mu.Unlock()
			return fmt.Errorf("compile schema of %s: %w", g, err)
		}
		ks.compiled[name] = sch
	}
	ks.mu.Unlock()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// The parts of the API objects that the cross-reference checks read.
type (
	objectMeta struct {
		Name, Namespace string
		Labels          map[string]string
	}
	intOrString struct {
		IntVal int
		StrVal string
	}
	envVar struct {
		Name, Value string
		ValueFrom   *struct {
			FieldRef *struct{ FieldPath string }
		}
	}
	probe struct {
		HTTPGet *struct {
			Path string
			Port intOrString
		}
	}
	container struct {
		Name          string
		Command, Args []string
		Env           []envVar
		Ports         []struct {
			Name          string
			ContainerPort int
		}
		LivenessProbe   *probe
		ReadinessProbe  *probe
		StartupProbe    *probe
		Resources       struct{ Requests, Limits map[string]any }
		SecurityContext *struct {
			Privileged   *bool
			Capabilities *struct{ Add []string }
		}
		VolumeMounts []struct {
			Name, MountPath string
			ReadOnly        bool
		}
	}
	podSpec struct {
		HostPID            bool
		ServiceAccountName string
		Tolerations        []struct{ Key, Operator, Effect string }
		Containers         []container
		Volumes            []struct {
			Name      string
			HostPath  *struct{ Path string }
			ConfigMap *struct{ Name string }
		}
	}
	podTemplate struct {
		Metadata objectMeta
		Spec     podSpec
	}
	kubeObject struct {
		where    string // file#document (kind name)
		gvk      gvk
		Metadata objectMeta
		Spec     struct {
			// Workloads.
			Selector struct {
				MatchLabels      map[string]string
				MatchExpressions []any
			}
			Template podTemplate
			// Services (whose selector is a plain map: see serviceSelector).
			Ports []struct {
				Name       string
				Port       int
				TargetPort intOrString
			}
		}
		Data            map[string]string // ConfigMaps
		serviceSelector map[string]string
		// ClusterRoles and ClusterRoleBindings.
		Rules []struct {
			APIGroups, Resources, Verbs []string
		}
		RoleRef  struct{ APIGroup, Kind, Name string }
		Subjects []struct{ Kind, Name, Namespace string }
	}
)

func (v *intOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &v.StrVal)
	}
	return json.Unmarshal(b, &v.IntVal)
}

func (v intOrString) String() string {
	if v.StrVal != "" {
		return v.StrVal
	}
	return strconv.Itoa(v.IntVal)
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// parseManifests splits a multi-document YAML file and checks each document
// against the schema. YAML is read as kubectl reads it (sigs.k8s.io/yaml,
// YAML 1.1: an unquoted `off` is a boolean), with a key given twice an error.
func parseManifests(ks *kubeSchemas, name string, content []byte) ([]kubeObject, []error) {
	var objs []kubeObject
	var errs []error
	for i, doc := range docSeparator.Split(string(content), -1) {
		where := fmt.Sprintf("%s#%d", name, i)
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if string(js) == "null" {
			continue // comments only
		}
		var head struct {
			APIVersion, Kind string
			Metadata         objectMeta
		}
		if err := json.Unmarshal(js, &head); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		g := gvk{version: head.APIVersion, kind: head.Kind}
		if grp, ver, ok := strings.Cut(head.APIVersion, "/"); ok {
			g.group, g.version = grp, ver
		}
		where = fmt.Sprintf("%s#%d (%s %s)", name, i, head.Kind, head.Metadata.Name)
		if err := ks.validate(g, js); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		o := kubeObject{where: where, gvk: g}
		err = json.Unmarshal(js, &o)
		if err == nil && g.kind == "Service" {
			var svc struct {
				Spec struct{ Selector map[string]string }
			}
			err = json.Unmarshal(js, &svc)
			o.serviceSelector = svc.Spec.Selector
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		objs = append(objs, o)
	}
	return objs, errs
}

func allKubeObjects(t *testing.T) []kubeObject {
	t.Helper()
	ks := kubernetesSchemas(t)
	var all []kubeObject
	for _, path := range kubernetesManifests(t) {
		objs, errs := parseManifests(ks, filepath.Base(path), readFile(t, path))
		for _, err := range errs {
			t.Error(err)
		}
		all = append(all, objs...)
	}
	if t.Failed() {
		t.FailNow()
	}
	return all
}

func TestKubernetesManifestsValid(t *testing.T) {
	objs := allKubeObjects(t)
	kinds := map[string]bool{}
	for _, o := range objs {
		t.Logf("valid: %s", o.where)
		kinds[o.gvk.kind] = true
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet", "Deployment", "Service", "ConfigMap"} {
		if !kinds[k] {
			t.Errorf("no %s in deploy/kubernetes", k)
		}
	}
}

// The checks are live: broken manifests do not pass them.
func TestKubernetesChecksCatchMistakes(t *testing.T) {
	ks := kubernetesSchemas(t)
	path := repoPath(t, "deploy", "kubernetes", "weft-daemonset.yaml")
	src := string(readFile(t, path))
	for name, mutate := range map[string]func(string) string{
		"unknown field": func(s string) string { return strings.Replace(s, "      hostPID: true", "      hostPid: true", 1) },
		"wrong type":    func(s string) string { return strings.Replace(s, "      hostPID: true", `      hostPID: "yes"`, 1) },
		"no container name": func(s string) string {
			return strings.Replace(s, "        - name: weft\n          image:", "        - image:", 1)
		},
		"bad quantity": func(s string) string { return strings.Replace(s, "memory: 512Mi", "memory: 512MB", 1) },
		"unknown kind": func(s string) string { return strings.Replace(s, "kind: DaemonSet", "kind: DaemonSett", 1) },
		"duplicate key": func(s string) string {
			return strings.Replace(s, "      hostPID: true", "      hostPID: true\n      hostPID: false", 1)
		},
		"YAML 1.1 boolean": func(s string) string {
			return strings.Replace(s, "            - name: WEFT_JAVA_AGENT\n              value: \"off\"", "            - name: WEFT_JAVA_AGENT\n              value: off", 1)
		},
		"bad indentation": func(s string) string {
			return strings.Replace(s, "          args: [\"run\"]", "         args: [\"run\"]", 1)
		},
	} {
		broken := mutate(src)
		if broken == src {
			t.Errorf("%s: the mutation did not apply; update this test", name)
			continue
		}
		_, errs := parseManifests(ks, "weft-daemonset.yaml", []byte(broken))
		if len(errs) == 0 {
			t.Errorf("%s: passed", name)
		} else {
			t.Logf("%s: %v", name, errs[0])
		}
	}
}

func workloads(objs []kubeObject) []kubeObject {
	var out []kubeObject
	for _, o := range objs {
		switch o.gvk.kind {
		case "DaemonSet", "Deployment", "StatefulSet":
			out = append(out, o)
		}
	}
	return out
}

func find(objs []kubeObject, kind, namespace, name string) (kubeObject, bool) {
	for _, o := range objs {
		if o.gvk.kind == kind && o.Metadata.Name == name && o.Metadata.Namespace == namespace {
			return o, true
		}
	}
	return kubeObject{}, false
}

// matches reports whether labels carry every key=value of sel.
func matches(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// clusterScoped are the kinds of the manifests that live outside
// namespaces.
var clusterScoped = map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true}

// What the API server would only find out when the pods run: references
// between the objects of the manifests.
func TestKubernetesReferences(t *testing.T) {
	objs := allKubeObjects(t)
	namespaces := map[string]bool{}
	for _, o := range objs {
		if o.gvk.kind == "Namespace" {
			namespaces[o.Metadata.Name] = true
		}
	}
	for _, o := range objs {
		if clusterScoped[o.gvk.kind] {
			if o.Metadata.Namespace != "" {
				t.Errorf("%s: a %s has no namespace", o.where, o.gvk.kind)
			}
			continue
		}
		// Explicit, so that `kubectl apply` does not put them in whatever
		// namespace the context has.
		if o.Metadata.Namespace == "" {
			t.Errorf("%s: no metadata.namespace", o.where)
		} else if !namespaces[o.Metadata.Namespace] {
			t.Errorf("%s: namespace %s is created by no manifest", o.where, o.Metadata.Namespace)
		}
	}
	for _, w := range workloads(objs) {
		ns := w.Metadata.Namespace
		if len(w.Spec.Selector.MatchExpressions) > 0 {
			t.Errorf("%s: matchExpressions are not checked here; use matchLabels", w.where)
		}
		if !matches(w.Spec.Selector.MatchLabels, w.Spec.Template.Metadata.Labels) {
			t.Errorf("%s: selector %v does not match the pod labels %v", w.where, w.Spec.Selector.MatchLabels, w.Spec.Template.Metadata.Labels)
		}
		spec := w.Spec.Template.Spec
		if sa := spec.ServiceAccountName; sa != "" && sa != "default" {
			if _, ok := find(objs, "ServiceAccount", ns, sa); !ok {
				t.Errorf("%s: service account %s/%s is created by no manifest", w.where, ns, sa)
			}
		}
		volumes := map[string]bool{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = true
			if v.ConfigMap != nil {
				if _, ok := find(objs, "ConfigMap", ns, v.ConfigMap.Name); !ok {
					t.Errorf("%s: config map %s/%s is created by no manifest", w.where, ns, v.ConfigMap.Name)
				}
			}
		}
		for _, c := range spec.Containers {
			r := c.Resources
			if r.Requests["cpu"] == nil || r.Requests["memory"] == nil || r.Limits["memory"] == nil {
				t.Errorf("%s: container %s: set cpu and memory requests and a memory limit", w.where, c.Name)
			}
			for _, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					t.Errorf("%s: container %s mounts undeclared volume %s", w.where, c.Name, m.Name)
				}
			}
			ports := map[string]bool{}
			for _, p := range c.Ports {
				ports[p.Name] = true
			}
			for what, pr := range map[string]*probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
				if pr != nil && pr.HTTPGet != nil && pr.HTTPGet.Port.StrVal != "" && !ports[pr.HTTPGet.Port.StrVal] {
					t.Errorf("%s: container %s: %s probe port %q is no named port", w.where, c.Name, what, pr.HTTPGet.Port.StrVal)
				}
			}
		}
	}
	for _, o := range objs {
		if o.gvk.kind != "ClusterRoleBinding" {
			continue
		}
		if _, ok := find(objs, o.RoleRef.Kind, "", o.RoleRef.Name); !ok {
			t.Errorf("%s: %s %s is created by no manifest", o.where, o.RoleRef.Kind, o.RoleRef.Name)
		}
		for _, sub := range o.Subjects {
			if _, ok := find(objs, sub.Kind, sub.Namespace, sub.Name); sub.Kind == "ServiceAccount" && !ok {
				t.Errorf("%s: service account %s/%s is created by no manifest", o.where, sub.Namespace, sub.Name)
			}
		}
	}
	for _, o := range objs {
		if o.gvk.kind != "Service" || len(o.serviceSelector) == 0 {
			continue
		}
		backend, ok := backingWorkload(objs, o)
		if !ok {
			t.Errorf("%s: selector %v matches no pods of the manifests", o.where, o.serviceSelector)
			continue
		}
		for _, sp := range o.Spec.Ports {
			if _, ok := containerPort(backend.Spec.Template, sp.Port, sp.TargetPort); !ok {
				t.Errorf("%s: port %s (target %s) is no port of %s", o.where, sp.Name, sp.TargetPort, backend.where)
			}
		}
	}
}

func backingWorkload(objs []kubeObject, svc kubeObject) (kubeObject, bool) {
	for _, w := range workloads(objs) {
		if w.Metadata.Namespace == svc.Metadata.Namespace && matches(svc.serviceSelector, w.Spec.Template.Metadata.Labels) {
			return w, true
		}
	}
	return kubeObject{}, false
}

// containerPort is the pods' port that a Service port sends to.
func containerPort(tmpl podTemplate, port int, target intOrString) (int, bool) {
	for _, c := range tmpl.Spec.Containers {
		for _, p := range c.Ports {
			switch {
			case target.StrVal != "" && p.Name == target.StrVal,
				target.StrVal == "" && target.IntVal != 0 && p.ContainerPort == target.IntVal,
				target.StrVal == "" && target.IntVal == 0 && p.ContainerPort == port:
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// serviceFor resolves a cluster DNS name (name.namespace[.svc[.cluster.local]])
// and port to the workload behind a Service of the manifests and its port.
func serviceFor(objs []kubeObject, hostport string) (kubeObject, int, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return kubeObject{}, 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return kubeObject{}, 0, err
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimSuffix(host, ".cluster.local"), ".svc"), ".")
	if len(parts) != 2 {
		return kubeObject{}, 0, fmt.Errorf("%s: want <service>.<namespace>", host)
	}
	svc, ok := find(objs, "Service", parts[1], parts[0])
	if !ok {
		return kubeObject{}, 0, fmt.Errorf("no Service %s/%s in the manifests", parts[1], parts[0])
	}
	w, ok := backingWorkload(objs, svc)
	if !ok {
		return kubeObject{}, 0, fmt.Errorf("Service %s/%s selects no pods of the manifests", parts[1], parts[0])
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Port == port {
			if cp, ok := containerPort(w.Spec.Template, sp.Port, sp.TargetPort); ok {
				return w, cp, nil
			}
		}
	}
	return kubeObject{}, 0, fmt.Errorf("Service %s/%s has no port %d backed by a container port", parts[1], parts[0], port)
}

// podEnv resolves a container's environment as the kubelet would, with a
// documentation address (RFC 5737) for the pod IP.
func podEnv(c container) map[string]string {
	env := map[string]string{}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "status.podIP", "status.hostIP":
				v = "192.0.2.10"
			default:
				v = "field-" + e.ValueFrom.FieldRef.FieldPath
			}
		}
		env[e.Name] = ref.ReplaceAllStringFunc(v, func(m string) string {
			if r, ok := env[m[2:len(m)-1]]; ok {
				return r
			}
			return m
		})
	}
	return env
}

func TestKubernetesWeftDaemonSet(t *testing.T) {
	objs := allKubeObjects(t)
	ds, ok := find(objs, "DaemonSet", "weft", "weft")
	if !ok {
		t.Fatal("no DaemonSet weft/weft")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostPID {
		t.Error("hostPID is off: weft would see its own pod's processes only")
	}
	everyTaint := false
	for _, tol := range spec.Tolerations {
		everyTaint = everyTaint || (tol.Key == "" && tol.Operator == "Exists" && tol.Effect == "")
	}
	if !everyTaint {
		t.Error("no toleration of every taint: nodes with taints would go untraced")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want weft alone", len(spec.Containers))
	}
	c := spec.Containers[0]

	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		caps := map[string]bool{}
		if sc != nil && sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				caps[c] = true
			}
		}
		for _, want := range []string{"BPF", "PERFMON", "NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE", "SYS_RESOURCE"} {
			if !caps[want] {
				t.Errorf("neither privileged nor given CAP_%s", want)
			}
		}
	}

	mounts := map[string]int{}
	for i, m := range c.VolumeMounts {
		mounts[m.MountPath] = i
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for _, path := range []string{"/sys/kernel/btf", "/sys/kernel/tracing", "/sys/kernel/debug", "/sys/fs/cgroup", "/sys/fs/bpf"} {
		i, ok := mounts[path]
		if !ok {
			t.Errorf("%s is not mounted", path)
			continue
		}
		m := c.VolumeMounts[i]
		if hostPaths[m.Name] != path {
			t.Errorf("%s: want the node's %s (hostPath), got volume %s", path, path, m.Name)
		}
		if path == "/sys/kernel/btf" && !m.ReadOnly {
			t.Error("/sys/kernel/btf should be mounted read-only")
		}
	}

	// Pod metadata (pkg/kube): the pods of this node, read with the
	// service account's rights.
	nodeName := false
	for _, e := range c.Env {
		nodeName = nodeName || (e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName")
	}
	if !nodeName {
		t.Error("no NODE_NAME from spec.nodeName: weft would watch the pods of the node its host name names")
	}
	for _, want := range []struct{ group, resource, verb string }{
		{"", "pods", "list"}, {"", "pods", "watch"}, {"apps", "replicasets", "get"}, {"batch", "jobs", "get"},
	} {
		if !granted(objs, "weft", spec.ServiceAccountName, want.group, want.resource, want.verb) {
			t.Errorf("service account weft/%s may not %s %s", spec.ServiceAccountName, want.verb, want.resource)
		}
	}

	env := podEnv(c)
	checkWeftSettings(t, "DaemonSet weft", env, runArgs(t, "DaemonSet weft", append(append([]string{}, c.Command...), c.Args...)))

	// Spans reach the collector: the endpoint is a Service of the manifests
	// whose pods listen there with an OTLP receiver.
	endpoint := env["OTEL_EXPORTER_OTLP_ENDPOINT"]
	if endpoint != "otel-collector.observability:4317" {
		t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT=%q, want otel-collector.observability:4317", endpoint)
	}
	if w, port, err := serviceFor(objs, endpoint); err != nil {
		t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT=%s: %v", endpoint, err)
	} else {
		checkCollectorReceives(t, objs, w, port)
	}

	// The liveness probe asks weft's metrics endpoint.
	pr := c.LivenessProbe
	if pr == nil || pr.HTTPGet == nil {
		t.Fatal("no HTTP liveness probe")
	}
	if pr.HTTPGet.Path != "/metrics" {
		t.Errorf("liveness probe on %s, want /metrics", pr.HTTPGet.Path)
	}
	host, metricsPort, err := net.SplitHostPort(env["WEFT_METRICS_ADDR"])
	if err != nil {
		t.Fatalf("WEFT_METRICS_ADDR=%q: %v", env["WEFT_METRICS_ADDR"], err)
	}
	if host == "127.0.0.1" || host == "localhost" {
		t.Error("WEFT_METRICS_ADDR on loopback: the kubelet's probe cannot reach it")
	}
	probePort := pr.HTTPGet.Port.IntVal
	for _, p := range c.Ports {
		if p.Name == pr.HTTPGet.Port.StrVal {
			probePort = p.ContainerPort
		}
	}
	if strconv.Itoa(probePort) != metricsPort {
		t.Errorf("liveness probe on port %d, weft serves metrics on %s", probePort, env["WEFT_METRICS_ADDR"])
	}
}

// granted reports whether a ClusterRole bound to service account ns/sa
// allows verb on group's resource.
func granted(objs []kubeObject, ns, sa, group, resource, verb string) bool {
	for _, b := range objs {
		if b.gvk.kind != "ClusterRoleBinding" || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		bound := false
		for _, sub := range b.Subjects {
			bound = bound || (sub.Kind == "ServiceAccount" && sub.Namespace == ns && sub.Name == sa)
		}
		role, ok := find(objs, "ClusterRole", "", b.RoleRef.Name)
		if !bound || !ok {
			continue
		}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
	}
	return false
}

// checkCollectorReceives: the collector behind the weft endpoint has an OTLP
// gRPC receiver on port, in a traces pipeline whose components are defined.
func checkCollectorReceives(t *testing.T, objs []kubeObject, w kubeObject, port int) {
	t.Helper()
	var c container
	for _, cc := range w.Spec.Template.Spec.Containers {
		for _, p := range cc.Ports {
			if p.ContainerPort == port {
				c = cc
			}
		}
	}
	// --config=<file> in a ConfigMap volume of that container.
	var cfgText string
	for _, v := range w.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm, ok := find(objs, "ConfigMap", w.Metadata.Namespace, v.ConfigMap.Name)
		if !ok {
			continue
		}
		for _, m := range c.VolumeMounts {
			for _, a := range c.Args {
				f, ok := strings.CutPrefix(a, "--config=")
				if !ok || m.Name != v.Name {
					continue
				}
				if key, ok := strings.CutPrefix(f, strings.TrimSuffix(m.MountPath, "/")+"/"); ok {
					cfgText = cm.Data[key]
				}
			}
		}
	}
	if cfgText == "" {
		t.Errorf("%s: cannot find the collector's --config=<file> in a mounted ConfigMap", w.where)
		return
	}
	var cfg struct {
		Receivers  map[string]map[string]any `json:"receivers"`
		Processors map[string]any            `json:"processors"`
		Exporters  map[string]any            `json:"exporters"`
		Extensions map[string]any            `json:"extensions"`
		Service    struct {
			Extensions []string `json:"extensions"`
			Pipelines  map[string]struct {
				Receivers  []string `json:"receivers"`
				Processors []string `json:"processors"`
				Exporters  []string `json:"exporters"`
			} `json:"pipelines"`
		} `json:"service"`
	}
	if err := yaml.UnmarshalStrict([]byte(cfgText), &cfg); err != nil {
		t.Errorf("%s: collector configuration: %v", w.where, err)
		return
	}
	endpoint := ""
	if protos, ok := cfg.Receivers["otlp"]["protocols"].(map[string]any); ok {
		if grpc, ok := protos["grpc"].(map[string]any); ok {
			endpoint, _ = grpc["endpoint"].(string)
		}
	}
	if _, p, err := net.SplitHostPort(endpoint); err != nil || p != strconv.Itoa(port) {
		t.Errorf("%s: the otlp receiver's grpc endpoint is %q, want :%d", w.where, endpoint, port)
	}
	defined := func(kind string, set map[string]any, names []string) {
		for _, n := range names {
			if _, ok := set[n]; !ok {
				t.Errorf("%s: %s %q is used but not defined", w.where, kind, n)
			}
		}
	}
	receivers := map[string]any{}
	for k := range cfg.Receivers {
		receivers[k] = true
	}
	for _, p := range cfg.Service.Pipelines {
		defined("receiver", receivers, p.Receivers)
		defined("processor", cfg.Processors, p.Processors)
		defined("exporter", cfg.Exporters, p.Exporters)
	}
	defined("extension", cfg.Extensions, cfg.Service.Extensions)
	traces, ok := cfg.Service.Pipelines["traces"]
	if !ok || !contains(traces.Receivers, "otlp") || len(traces.Exporters) == 0 {
		t.Errorf("%s: no traces pipeline from the otlp receiver to an exporter", w.where)
	}
	// ${env:NAME} must be set in the container.
	env := podEnv(c)
	for _, m := range regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`).FindAllStringSubmatch(cfgText, -1) {
		if _, ok := env[m[1]]; !ok {
			t.Errorf("%s: the collector configuration uses ${env:%s}, which the container does not set", w.where, m[1])
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
