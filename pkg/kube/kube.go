// Package kube tells which Kubernetes pod, container and workload a process
// belongs to, from an informer on the pods of this node. It implements
// procinfo.Metadata; see identity.go for the attributes and service name it
// derives.
package kube

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/weftdev/weft/pkg/procinfo"
)

// Config configures a Source.
type Config struct {
	// NodeName is the node whose pods are watched (the DaemonSet passes
	// spec.nodeName as NODE_NAME); default: the host name, which is
	// usually the node's name.
	NodeName string
	// WellKnownLabels derives service.name and service.version from the
	// app.kubernetes.io/ labels too (identity.go).
	WellKnownLabels bool
	// REST is how the API server is reached; default: the in-cluster
	// configuration (service account token, KUBERNETES_SERVICE_HOST).
	REST *rest.Config
	// SyncTimeout is how long Start waits for the first list of pods
	// before it warns that the API is out of reach; default 30s.
	SyncTimeout time.Duration
	// Log receives the source's messages; default slog's, with
	// component=kube.
	Log *slog.Logger
}

// Source is the pods of one node, indexed by UID and container id. It is
// safe for concurrent use.
type Source struct {
	node     string
	labels   bool
	timeout  time.Duration
	log      *slog.Logger
	host     string
	informer cache.SharedIndexInformer
	owners   *ownerLookup

	mu         sync.RWMutex
	pods       map[string]*podRecord // by UID, and a static pod's config hash
	containers map[string]containerRef
}

type podRecord struct {
	pod    *corev1.Pod
	owners owners
	// containerIDs are the ids this record put in the container index.
	containerIDs []string
}

type containerRef struct {
	podUID, name string
}

// mirrorAnnotation holds a static pod's config hash: its cgroup is named
// after the hash, its API object (the mirror pod) has a UID of its own.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// New returns a Source for the node; Start runs it. It fails when no API
// server is configured (not running in Kubernetes).
func New(cfg Config) (*Source, error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "kube")
	rc := cfg.REST
	if rc == nil {
		var err error
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("kubernetes in-cluster configuration: %w", err)
		}
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "weft"
	if cfg.NodeName == "" {
		name, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("kubernetes node name: not set, and no host name: %w", err)
		}
		log.Warn("node name not set (NODE_NAME from the downward API); using the host name", "node", name)
		cfg.NodeName = name
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 30 * time.Second
	}
	cs, err := newClients(rc)
	if err != nil {
		return nil, err
	}
	// client-go logs through klog (the reflector's list and watch
	// failures among others): into weft's log instead of stderr.
	klog.SetSlogLogger(log)

	s := &Source{
		node:       cfg.NodeName,
		labels:     cfg.WellKnownLabels,
		timeout:    cfg.SyncTimeout,
		log:        log,
		host:       rc.Host,
		owners:     newOwnerLookup(cs.apps, cs.batch, log),
		pods:       map[string]*podRecord{},
		containers: map[string]containerRef{},
	}
	sel := fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	lw := cache.NewFilteredListWatchFromClient(cs.core, "pods", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = sel })
	s.informer = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	if err := s.informer.SetTransform(trimPod); err != nil {
		return nil, fmt.Errorf("kubernetes pod informer: %w", err)
	}
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.update(obj) },
		UpdateFunc: func(_, obj any) { s.update(obj) },
		DeleteFunc: s.remove,
	}); err != nil {
		return nil, fmt.Errorf("kubernetes pod informer: %w", err)
	}
	return s, nil
}

// Start watches the node's pods until ctx is done. It does not wait for
// them: processes resolved before the first list arrives are asked about
// again (procinfo.Metadata). If the list takes longer than SyncTimeout,
// Start warns, and weft goes on without Kubernetes attributes until the
// API server answers.
func (s *Source) Start(ctx context.Context) {
	go s.informer.RunWithContext(ctx)
	go func() {
		start := time.Now()
		wait, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		if cache.WaitForCacheSync(wait.Done(), s.informer.HasSynced) {
			s.log.Info("watching the node's pods", "node", s.node, "pods", s.count(), "took", time.Since(start).Round(time.Millisecond))
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("Kubernetes API server not reachable: spans carry no k8s.* attributes until it is",
			"api", s.host, "node", s.node, "waited", s.timeout)
		if cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
			s.log.Info("watching the node's pods", "node", s.node, "pods", s.count(), "took", time.Since(start).Round(time.Millisecond))
		}
	}()
}

// Pod implements procinfo.Metadata. A process whose cgroup names a
// container is known once its pod's status lists that container (so its
// container name is never missed); one that names only a pod, once the
// pod is.
func (s *Source) Pod(containerID, podUID string) (procinfo.PodInfo, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if containerID != "" {
		ref, ok := s.containers[containerID]
		if !ok {
			return procinfo.PodInfo{}, false
		}
		rec := s.pods[ref.podUID]
		return podIdentity(rec.pod, ref.name, rec.owners, s.node, s.labels), true
	}
	rec, ok := s.pods[podUID]
	if podUID == "" || !ok {
		return procinfo.PodInfo{}, false
	}
	name := ""
	if len(rec.pod.Spec.Containers) == 1 && len(rec.pod.Spec.InitContainers) == 0 {
		name = rec.pod.Spec.Containers[0].Name
	}
	return podIdentity(rec.pod, name, rec.owners, s.node, s.labels), true
}

func (s *Source) count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.containers)
}

// update indexes a pod added or changed. Resolving its owners may call the
// API, so it is done before the lock is taken.
func (s *Source) update(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	rec := &podRecord{pod: pod, owners: s.owners.owners(context.Background(), pod)}
	refs := map[string]containerRef{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, st := range list {
			if id := trimContainerID(st.ContainerID); id != "" {
				refs[id] = containerRef{podUID: string(pod.UID), name: st.Name}
				rec.containerIDs = append(rec.containerIDs, id)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.pods[string(pod.UID)]; ok {
		s.unindexLocked(old)
	}
	s.pods[string(pod.UID)] = rec
	if h := pod.Annotations[mirrorAnnotation]; h != "" {
		s.pods[h] = rec
	}
	for id, ref := range refs {
		s.containers[id] = ref
	}
}

func (s *Source) remove(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.pods[string(pod.UID)]; ok {
		s.unindexLocked(old)
	}
}

func (s *Source) unindexLocked(rec *podRecord) {
	for _, id := range rec.containerIDs {
		delete(s.containers, id)
	}
	delete(s.pods, string(rec.pod.UID))
	if h := rec.pod.Annotations[mirrorAnnotation]; h != "" {
		delete(s.pods, h)
	}
}

// trimContainerID turns a status's "containerd://<id>" (or docker://,
// cri-o://…) into the id that cgroup names carry.
func trimContainerID(s string) string {
	if _, id, ok := strings.Cut(s, "://"); ok {
		return strings.ToLower(id)
	}
	return strings.ToLower(s)
}

// trimPod drops what weft never reads from the pods it keeps: the managed
// fields and kubectl's copy of the last applied manifest are often most of
// a pod's size.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	delete(pod.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
	pod.Spec.Volumes = nil
	return pod, nil
}

var _ procinfo.Metadata = (*Source)(nil)
