package kube

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const (
	// ownerTimeout bounds one GET of a ReplicaSet or Job.
	ownerTimeout = 5 * time.Second
	// ownerRetry is how long a failed lookup's guess is used before the
	// API is asked again.
	ownerRetry = time.Minute
	// maxOwners bounds the cache; a node runs far fewer workloads.
	maxOwners = 4096
)

// ownerLookup finds the workload above a pod's ReplicaSet (a Deployment)
// or Job (a CronJob). Only those two need the API: the pod's own owner
// reference names its StatefulSet, DaemonSet, ReplicaSet or Job. Lookups
// are cached, so a node's pods of one ReplicaSet cost one GET.
type ownerLookup struct {
	apps  rest.Interface // apps/v1
	batch rest.Interface // batch/v1
	log   *slog.Logger
	now   func() time.Time

	mu     sync.Mutex
	cache  map[string]ownerName // "kind/namespace/name"
	warned map[string]bool      // kinds whose lookup failed, warned once
}

type ownerName struct {
	name    string    // the parent's name, "" for none
	expires time.Time // zero: for good
}

func newOwnerLookup(apps, batch rest.Interface, log *slog.Logger) *ownerLookup {
	return &ownerLookup{apps: apps, batch: batch, log: log, now: time.Now,
		cache: map[string]ownerName{}, warned: map[string]bool{}}
}

// owners resolves a pod's workloads. It may call the API server, so it is
// called when a pod event arrives, never when a process is resolved.
func (l *ownerLookup) owners(ctx context.Context, pod *corev1.Pod) owners {
	var o owners
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return o
	}
	switch ref.Kind {
	case "ReplicaSet":
		o.replicaSet = ref.Name
		o.deployment = l.parent(ctx, "ReplicaSet", pod.Namespace, ref.Name, "Deployment", func() string {
			// The Deployment controller names its ReplicaSets
			// <deployment>-<pod-template-hash>.
			if h := pod.Labels["pod-template-hash"]; h != "" {
				if d, ok := strings.CutSuffix(ref.Name, "-"+h); ok {
					return d
				}
			}
			return ""
		})
	case "StatefulSet":
		o.statefulSet = ref.Name
	case "DaemonSet":
		o.daemonSet = ref.Name
	case "Job":
		o.job = ref.Name
		o.cronJob = l.parent(ctx, "Job", pod.Namespace, ref.Name, "CronJob", func() string { return "" })
	}
	return o
}

// parent returns the name of the controller of kind parentKind of the
// object kind/ns/name, or guess() when the API cannot say.
func (l *ownerLookup) parent(ctx context.Context, kind, ns, name, parentKind string, guess func() string) string {
	key := kind + "/" + ns + "/" + name
	l.mu.Lock()
	c, ok := l.cache[key]
	l.mu.Unlock()
	if ok && (c.expires.IsZero() || l.now().Before(c.expires)) {
		return c.name
	}
	ctx, cancel := context.WithTimeout(ctx, ownerTimeout)
	defer cancel()
	var meta metav1.Object
	var err error
	switch kind {
	case "ReplicaSet":
		rs := &appsv1.ReplicaSet{}
		meta, err = rs, l.apps.Get().Namespace(ns).Resource("replicasets").Name(name).Do(ctx).Into(rs)
	case "Job":
		job := &batchv1.Job{}
		meta, err = job, l.batch.Get().Namespace(ns).Resource("jobs").Name(name).Do(ctx).Into(job)
	default:
		err = fmt.Errorf("no lookup of %s", kind)
	}
	switch {
	case err == nil:
		c = ownerName{}
		if ref := metav1.GetControllerOf(meta); ref != nil && ref.Kind == parentKind {
			c.name = ref.Name
		}
	case apierrors.IsNotFound(err):
		// Gone already: the pod's own references are all there is.
		c = ownerName{name: guess()}
	default:
		c = ownerName{name: guess(), expires: l.now().Add(ownerRetry)}
		l.warnOnce(kind, err)
	}
	l.mu.Lock()
	if len(l.cache) >= maxOwners {
		clear(l.cache)
	}
	l.cache[key] = c
	l.mu.Unlock()
	return c.name
}

func (l *ownerLookup) warnOnce(kind string, err error) {
	l.mu.Lock()
	first := !l.warned[kind]
	l.warned[kind] = true
	l.mu.Unlock()
	if first {
		l.log.Warn("cannot read the owner of pods' "+kind+"s; workload names are guessed from object names (check weft's RBAC)",
			"kind", kind, "error", err)
	}
}
