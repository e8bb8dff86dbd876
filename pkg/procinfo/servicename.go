package procinfo

import (
	"net/url"
	"path"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

const (
	envServiceName = "OTEL_SERVICE_NAME"
	envResAttrs    = "OTEL_RESOURCE_ATTRIBUTES"
)

// serviceName applies the naming rules in order of how explicitly the
// process's owner chose the name: OTEL_SERVICE_NAME, then service.name in
// OTEL_RESOURCE_ATTRIBUTES (as an OpenTelemetry SDK inside the process would),
// then the name its orchestrator implies (podService: Kubernetes
// annotations, labels and workload, see pkg/kube), then for a JVM the main
// class or jar, then the executable name.
func serviceName(env map[string]string, envAttrs []attribute.KeyValue, podService, exeName string, args []string) string {
	if n := strings.TrimSpace(env[envServiceName]); n != "" {
		return n
	}
	for _, kv := range envAttrs {
		if kv.Key == semconv.ServiceNameKey {
			if n := strings.TrimSpace(kv.Value.Emit()); n != "" {
				return n
			}
		}
	}
	if n := strings.TrimSpace(podService); n != "" {
		return n
	}
	if exeName == "java" {
		if n := jvmMainName(args); n != "" {
			return n
		}
	}
	return exeName
}

// unknownServiceName follows the specification's fallback for processes we
// know nothing about.
func unknownServiceName(comm string, pid uint32) string {
	if comm == "" {
		comm = strconv.FormatUint(uint64(pid), 10)
	}
	return "unknown_service:" + comm
}

// parseResourceAttrs parses OTEL_RESOURCE_ATTRIBUTES the way the Go SDK does
// (comma separated key=value, values percent-decoded), but skips malformed
// entries instead of rejecting the whole variable: a typo in one entry should
// not cost the process its other attributes.
func parseResourceAttrs(s string) []attribute.KeyValue {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []attribute.KeyValue
	for p := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		v = strings.TrimSpace(v)
		if dec, err := url.PathUnescape(v); err == nil {
			v = dec
		}
		out = append(out, attribute.String(k, v))
	}
	return out
}

// jvmArgOptions are the java launcher options whose value is the next
// argument (unless written as --opt=value).
var jvmArgOptions = map[string]bool{
	"-cp": true, "-classpath": true, "--class-path": true,
	"-p": true, "--module-path": true, "--upgrade-module-path": true,
	"--add-modules": true, "--limit-modules": true, "--enable-native-access": true,
	"--add-reads": true, "--add-exports": true, "--add-opens": true,
	"--patch-module": true, "--source": true,
}

// jvmMainName finds what a JVM runs from its command line: the jar name for
// -jar, the class of -m module/class, or the main class, reduced to the simple
// name (com.example.FooKt -> FooKt). It returns "" when nothing is found,
// e.g. for "java -version".
func jvmMainName(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "-jar":
			return strings.TrimSuffix(path.Base(next()), ".jar")
		case a == "-m" || a == "--module":
			return moduleMain(next())
		case strings.HasPrefix(a, "--module="):
			return moduleMain(strings.TrimPrefix(a, "--module="))
		case jvmArgOptions[a]:
			i++
		case strings.HasPrefix(a, "-"), strings.HasPrefix(a, "@"):
			// Other options carry their value inline (-Xmx1g,
			// -Dk=v, --opt=v); @file is an argument file.
		default:
			return simpleClassName(a)
		}
	}
	return ""
}

// moduleMain turns "module/com.example.Main" into "Main"; without a class the
// module's name is what identifies the program.
func moduleMain(s string) string {
	mod, cls, ok := strings.Cut(s, "/")
	if !ok {
		return mod
	}
	return simpleClassName(cls)
}

func simpleClassName(s string) string {
	if strings.HasSuffix(s, ".java") {
		// Source-file mode: java Foo.java.
		return strings.TrimSuffix(path.Base(s), ".java")
	}
	if i := strings.LastIndexAny(s, "./"); i >= 0 {
		return s[i+1:]
	}
	return s
}
