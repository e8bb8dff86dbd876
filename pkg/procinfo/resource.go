package procinfo

import (
	"os/user"
	"path"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

const schemaURL = semconv.SchemaURL

// distroName identifies weft as the telemetry producer. The telemetry.sdk.*
// attributes are deliberately absent: they would describe the agent's Go SDK,
// not the monitored process.
const distroName = "weft"

type hostInfo struct {
	name, id, version string
}

// baseAttrs are the attributes every resource has, known or not.
func (r *Resolver) baseAttrs(pid uint32, service string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.ServiceName(service),
		semconv.ProcessPID(int(pid)),
		semconv.OSTypeLinux,
		semconv.TelemetryDistroName(distroName),
	}
	if r.host.version != "" {
		attrs = append(attrs, semconv.TelemetryDistroVersion(r.host.version))
	}
	if r.host.name != "" {
		attrs = append(attrs, semconv.HostName(r.host.name))
	}
	if r.host.id != "" {
		attrs = append(attrs, semconv.HostID(r.host.id))
	}
	return attrs
}

func (r *Resolver) build(pid uint32, st procStat, exe string) *entry {
	env := r.fs.environ(pid, envServiceName, envResAttrs)
	envAttrs := parseResourceAttrs(env[envResAttrs])
	args := r.fs.cmdline(pid)

	exeName := st.comm
	if exe != "" {
		exeName = path.Base(exe)
	}
	cg := r.fs.cgroup(pid)
	pod, podKnown := r.pod(cg.ContainerID, cg.PodUID)
	service := validUTF8(serviceName(env, envAttrs, pod.ServiceName, exeName, args))
	if service == "" {
		service = unknownServiceName(validUTF8(st.comm), pid)
	}

	attrs := r.baseAttrs(pid, service)
	attrs = append(attrs,
		semconv.ProcessParentPID(st.ppid),
		semconv.ProcessExecutableName(validUTF8(exeName)),
	)
	if exe != "" {
		attrs = append(attrs, semconv.ProcessExecutablePath(validUTF8(exe)))
	}
	if len(args) > 0 {
		clean := commandArgs(args)
		for i, a := range clean {
			clean[i] = validUTF8(a)
		}
		attrs = append(attrs, semconv.ProcessCommandArgs(clean...))
	}
	if uid, ok := r.fs.uid(pid); ok {
		attrs = append(attrs, semconv.ProcessOwner(r.owners.name(uid)))
	}
	if exeName == "java" {
		attrs = append(attrs, semconv.ProcessRuntimeName("java"))
	}
	if cg.ContainerID != "" {
		attrs = append(attrs, semconv.ContainerID(cg.ContainerID))
	}
	for _, kv := range pod.Attributes {
		if kv.Value.Type() == attribute.STRING {
			kv.Value = attribute.StringValue(validUTF8(kv.Value.AsString()))
		}
		attrs = append(attrs, kv)
	}
	// The process's own OTEL_RESOURCE_ATTRIBUTES override what we detected,
	// as they would inside an SDK; service.name is re-added last because
	// its precedence rules were applied above.
	for _, kv := range envAttrs {
		attrs = append(attrs, attribute.String(string(kv.Key), validUTF8(kv.Value.AsString())))
	}
	attrs = append(attrs, semconv.ServiceName(service))

	return &entry{
		startTime: st.startTime,
		exe:       exe,
		res:       resource.NewWithAttributes(schemaURL, attrs...),
		service:   service,
		cgroup:    cg,
		podLater:  !podKnown && r.meta != nil && (cg.ContainerID != "" || cg.PodUID != ""),
	}
}

// pod asks the metadata source, when there is one, about a process in a
// container or pod.
func (r *Resolver) pod(containerID, podUID string) (PodInfo, bool) {
	if r.meta == nil || (containerID == "" && podUID == "") {
		return PodInfo{}, false
	}
	return r.meta.Pod(containerID, podUID)
}

// ownerNames caches uid to user name lookups, which read /etc/passwd.
type ownerNames struct {
	names *lru.Cache[string, string]
}

func newOwnerNames() *ownerNames {
	c, _ := lru.New[string, string](256) // a constant positive size cannot fail
	return &ownerNames{names: c}
}

// name returns the user name for uid, or uid itself when it has no passwd
// entry (common for container users).
func (o *ownerNames) name(uid string) string {
	if n, ok := o.names.Get(uid); ok {
		return n
	}
	n := uid
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		n = u.Username
	}
	o.names.Add(uid, n)
	return n
}
