package config

import (
	"flag"
	"fmt"
	"time"
)

// Flags are the command-line settings of `weft run`. Only flags the user
// set override what the file and environment said.
type Flags struct {
	ConfigPath   string
	probes       string
	ioctl        string
	propagation  string
	rtHooks      string
	tls          string
	captureBytes int
	sockTable    int
	pids         string
	ports        string
	exe          string
	cgroups      []string
	containers   []string
	javaAgent    string
	nodeAgent    string
	javaArgs     string
	reqTimeout   time.Duration
	keepQuery    bool
	metricsAddr  string
	statsEvery   time.Duration
	logLevel     string
	maxProcs     int
	otlp         otlpFlags
	profile      profileFlags
	sampler      samplerFlags
	metrics      metricsFlags
	routes       []string
	kube         kubernetesFlags
}

// RegisterFlags declares the flags on fs.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	d := Default()
	fs.StringVar(&f.ConfigPath, "config", "", "YAML configuration file")
	fs.StringVar(&f.probes, "probes", d.Probes, "attach path: auto, kprobe, tracepoint or syscalls")
	fs.StringVar(&f.ioctl, "ioctl-packets", d.IoctlPackets, "read OBI's ioctl mount packets: auto, on or off (on with the tracepoint path slows every process's syscalls)")
	fs.StringVar(&f.propagation, "propagation", d.Propagation, "write traceparent into outgoing HTTP/1.x requests: headers or off")
	fs.StringVar(&f.rtHooks, "runtime-hooks", d.RuntimeHooks, "uprobes on Go programs so their calls keep their goroutine's parent: on or off")
	fs.StringVar(&f.tls, "tls", d.TLS, "uprobes on traced processes' TLS library (OpenSSL, Go's crypto/tls, the Java agent's) so HTTPS is seen in clear: on or off")
	fs.StringVar(&f.javaAgent, "java-agent", d.JavaAgent, "load weft's Java agent into traced JVMs: attach or off")
	fs.StringVar(&f.nodeAgent, "node-agent", d.NodeAgent, "load weft's Node.js companion into traced Node.js processes: attach or off")
	fs.StringVar(&f.javaArgs, "java-agent-args", "", "arguments for the Java agent weft attaches, e.g. mode=ioctl")
	fs.IntVar(&f.captureBytes, "capture-bytes", d.CaptureBytes, "leading payload bytes captured per send/recv (64..4096)")
	fs.IntVar(&f.sockTable, "socket-table-size", d.SocketTableSize, "sockets with traffic followed to their close at once (1024..16777216)")
	fs.StringVar(&f.pids, "pid", "", "trace these process ids (comma-separated) and their children")
	fs.StringVar(&f.ports, "port", "", "trace processes listening on these TCP ports (comma-separated)")
	fs.StringVar(&f.exe, "exe", "", "trace processes whose executable path or command line matches this regexp")
	fs.Func("cgroup", "trace every process in this cgroup v2 directory and below (repeatable, or comma-separated)", func(v string) error {
		f.cgroups = append(f.cgroups, splitList(v)...)
		return nil
	})
	fs.Func("container", "trace every process of this container, by id (repeatable, or comma-separated)", func(v string) error {
		f.containers = append(f.containers, splitList(v)...)
		return nil
	})
	f.otlp.register(fs, d.OTLP)
	fs.DurationVar(&f.reqTimeout, "request-timeout", d.RequestTimeout, "end requests that got no answer after this long")
	fs.BoolVar(&f.keepQuery, "keep-query", false, "export url.query")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve self-metrics on this address, e.g. 127.0.0.1:9464")
	fs.DurationVar(&f.statsEvery, "stats-interval", d.StatsInterval, "log self-metrics this often (0: never)")
	fs.StringVar(&f.logLevel, "log-level", d.LogLevel, "debug, info, warn or error")
	fs.IntVar(&f.maxProcs, "max-procs", d.MaxProcs, "CPUs weft's own Go code runs on at once (GOMAXPROCS, lowered only; 0: the Go runtime's choice)")
	f.profile.register(fs, d.Profile)
	f.sampler.register(fs, d.Sampler)
	f.metrics.register(fs, d.Metrics)
	fs.Func("route", "a route pattern, e.g. /users/{id}/orders or /static/** (repeatable, or comma-separated)", func(v string) error {
		f.routes = append(f.routes, splitList(v)...)
		return nil
	})
	f.kube.register(fs, d.Kubernetes)
	return f
}

func (f *Flags) apply(c *Config, fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if err != nil {
			return
		}
		switch fl.Name {
		case "probes":
			c.Probes = f.probes
		case "ioctl-packets":
			c.IoctlPackets = f.ioctl
		case "propagation":
			c.Propagation = f.propagation
		case "runtime-hooks":
			c.RuntimeHooks = f.rtHooks
		case "tls":
			c.TLS = f.tls
		case "java-agent":
			c.JavaAgent = f.javaAgent
		case "node-agent":
			c.NodeAgent = f.nodeAgent
		case "java-agent-args":
			c.JavaAgentArgs = f.javaArgs
		case "capture-bytes":
			c.CaptureBytes = f.captureBytes
		case "socket-table-size":
			c.SocketTableSize = f.sockTable
		case "pid":
			c.Select.PIDs, err = parseInts(f.pids)
		case "port":
			c.Select.Ports, err = parseInts(f.ports)
		case "exe":
			c.Select.Exe = f.exe
		case "cgroup":
			c.Select.Cgroups = f.cgroups
		case "container":
			c.Select.Containers = f.containers
		case "request-timeout":
			c.RequestTimeout = f.reqTimeout
		case "keep-query":
			c.KeepQuery = f.keepQuery
		case "metrics-addr":
			c.MetricsAddr = f.metricsAddr
		case "stats-interval":
			c.StatsInterval = f.statsEvery
		case "log-level":
			c.LogLevel = f.logLevel
		case "max-procs":
			c.MaxProcs = f.maxProcs
		case "route":
			c.Routes = f.routes
		default:
			f.profile.apply(&c.Profile, fl.Name)
			err = f.otlp.apply(&c.OTLP, fl.Name)
			f.sampler.apply(&c.Sampler, fl.Name)
			f.metrics.apply(&c.Metrics, fl.Name)
			f.kube.apply(&c.Kubernetes, fl.Name)
		}
		if err != nil {
			err = fmt.Errorf("-%s: %w", fl.Name, err)
		}
	})
	return err
}
