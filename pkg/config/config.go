// Package config holds weft's settings and resolves them in one order:
// defaults, then the YAML file, then environment variables, then flags.
// docs/configuration.md lists every setting; keep the two in step.
package config

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Config is everything `weft run` can be told.
type Config struct {
	// Probes is the attach path: auto, kprobe, tracepoint (socket calls
	// only) or syscalls (syscall tracepoints: slows the whole host).
	Probes string `yaml:"probes"`
	// IoctlPackets reads OBI's ioctl packets (docs/ioctl-protocol.md):
	// auto (where kprobes or syscall tracepoints run anyway), on or off.
	// On the tracepoint path "on" attaches syscalls:sys_enter_ioctl,
	// which puts every task on the host on the slow syscall path.
	IoctlPackets string `yaml:"ioctl_packets"`
	// CaptureBytes is how many leading bytes of each send/recv reach user
	// space (256..4096).
	CaptureBytes int `yaml:"capture_bytes"`
	// SocketTableSize is how many sockets with traffic weft follows to
	// their close at once (1024..16777216); past it, closes go unseen
	// and weft_socket_table_full counts the calls.
	SocketTableSize int `yaml:"socket_table_size"`

	// Propagation is "headers" (write traceparent into the HTTP/1.x
	// requests traced processes send) or "off".
	Propagation string `yaml:"propagation"`

	// RuntimeHooks is "on" (uprobes on the Go runtime and net/http, so that
	// a Go program's calls get the parent of their goroutine's request) or
	// "off" (Go programs are followed fail-closed: calls start traces).
	RuntimeHooks string `yaml:"runtime_hooks"`

	// TLS is "on" (uprobes on each traced process's TLS library, OpenSSL
	// or Go's crypto/tls, so that HTTPS is seen in clear) or "off" (TLS
	// connections are not followed).
	TLS string `yaml:"tls"`

	// JavaAgent is "attach" (load weft's Java agent into every traced
	// HotSpot JVM, so coroutines and executors keep their traces) or "off".
	JavaAgent string `yaml:"java_agent"`
	// JavaAgentArgs are passed to the agent when weft attaches it, e.g.
	// "mode=ioctl".
	JavaAgentArgs string `yaml:"java_agent_args"`
	// NodeAgent is "attach" (load weft's Node.js companion into every
	// traced Node.js process through its inspector, so its calls keep
	// their request's parent) or "off" (load it with NODE_OPTIONS, or
	// calls start traces of their own).
	NodeAgent string `yaml:"node_agent"`

	Select Select `yaml:"select"`
	OTLP   OTLP   `yaml:"otlp"`
	// Profile is the on-CPU profiler (docs/profiling.md).
	Profile Profile `yaml:"profile"`
	// Sampler decides which traces are recorded.
	Sampler Sampler `yaml:"sampler"`
	// Metrics are the metrics derived from spans.
	Metrics Metrics `yaml:"metrics"`
	// Routes are route patterns ("/users/{id}/orders", "/static/**") that
	// name span routes and metric series before the heuristics do.
	Routes []string `yaml:"routes"`
	// Kubernetes adds pod metadata to the resources of processes in pods.
	Kubernetes Kubernetes `yaml:"kubernetes"`

	// RequestTimeout ends requests that never got an answer; their spans
	// are exported with error.type "timeout".
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// KeepQuery exports url.query; off by default since query strings
	// often carry secrets.
	KeepQuery bool `yaml:"keep_query"`

	// MetricsAddr serves self-metrics (Prometheus text) when set, e.g.
	// 127.0.0.1:9464.
	MetricsAddr string `yaml:"metrics_addr"`
	// StatsInterval is how often self-metrics are logged; 0 disables.
	StatsInterval time.Duration `yaml:"stats_interval"`
	LogLevel      string        `yaml:"log_level"`
	// MaxProcs caps the CPUs weft's own Go code runs on at once
	// (GOMAXPROCS, lowered only); 0 leaves the Go runtime's choice.
	MaxProcs int `yaml:"max_procs"`
}

// Select says which processes are traced. Criteria add up; none at all
// means every process on the host except weft itself.
type Select struct {
	PIDs  []int  `yaml:"pids"`
	Ports []int  `yaml:"ports"` // processes listening on these TCP ports
	Exe   string `yaml:"exe"`   // regexp on the executable path or command line
	// Cgroups are cgroup v2 directories: every process in one or below.
	Cgroups []string `yaml:"cgroups"`
	// Containers are container ids (or prefixes of 12+ characters),
	// resolved to their cgroups through /proc/*/cgroup.
	Containers []string `yaml:"containers"`
}

// All reports whether no criterion narrows the selection.
func (s Select) All() bool {
	return len(s.PIDs) == 0 && len(s.Ports) == 0 && s.Exe == "" && len(s.Cgroups) == 0 && len(s.Containers) == 0
}

// Default returns the settings used when nothing else is said.
func Default() Config {
	return Config{
		Probes:          "auto",
		IoctlPackets:    "auto",
		Propagation:     "headers",
		RuntimeHooks:    "on",
		TLS:             "on",
		JavaAgent:       "off",
		NodeAgent:       "off",
		CaptureBytes:    512,
		SocketTableSize: 65536,
		RequestTimeout:  2 * time.Minute,
		StatsInterval:   time.Minute,
		LogLevel:        "info",
		MaxProcs:        1,
		OTLP:            defaultOTLP(),
		Profile:         defaultProfile(),
		Sampler:         Sampler{Name: "parentbased_always_on"},
		Metrics:         defaultMetrics(),
		Kubernetes:      defaultKubernetes(),
	}
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch c.Probes {
	case "auto", "kprobe", "tracepoint", "syscalls":
	default:
		return fmt.Errorf("probes %q: want auto, kprobe, tracepoint or syscalls", c.Probes)
	}
	switch c.IoctlPackets {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("ioctl_packets %q: want auto, on or off", c.IoctlPackets)
	}
	switch c.Propagation {
	case "headers", "off":
	default:
		return fmt.Errorf("propagation %q: want headers or off", c.Propagation)
	}
	switch c.RuntimeHooks {
	case "on", "off":
	default:
		return fmt.Errorf("runtime_hooks %q: want on or off", c.RuntimeHooks)
	}
	switch c.TLS {
	case "on", "off":
	default:
		return fmt.Errorf("tls %q: want on or off", c.TLS)
	}
	switch c.NodeAgent {
	case "attach", "off":
	default:
		return fmt.Errorf("node_agent %q: want attach or off", c.NodeAgent)
	}
	switch c.JavaAgent {
	case "attach", "off":
	default:
		return fmt.Errorf("java_agent %q: want attach or off", c.JavaAgent)
	}
	if c.CaptureBytes < 64 || c.CaptureBytes > 4096 {
		return fmt.Errorf("capture_bytes %d: want 64..4096", c.CaptureBytes)
	}
	if c.MaxProcs < 0 {
		return fmt.Errorf("max_procs %d: want 0 (the Go runtime's choice) or more", c.MaxProcs)
	}
	if c.SocketTableSize < 1024 || c.SocketTableSize > 1<<24 {
		return fmt.Errorf("socket_table_size %d: want 1024..16777216", c.SocketTableSize)
	}
	if c.Select.Exe != "" {
		if _, err := regexp.Compile(c.Select.Exe); err != nil {
			return fmt.Errorf("select.exe: %w", err)
		}
	}
	for _, p := range c.Select.Ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("select.ports: %d out of range", p)
		}
	}
	if c.RequestTimeout <= 0 {
		return errors.New("request_timeout must be positive")
	}
	if err := c.OTLP.validate(); err != nil {
		return err
	}
	if err := c.Profile.validate(); err != nil {
		return err
	}
	if err := c.Sampler.validate(); err != nil {
		return err
	}
	if err := c.validateMetrics(); err != nil {
		return err
	}
	if err := c.Kubernetes.validate(); err != nil {
		return err
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level %q: want debug, info, warn or error", c.LogLevel)
	}
	return nil
}
