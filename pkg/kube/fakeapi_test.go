package kube

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// fakeAPI speaks as much of the Kubernetes API as the pod informer and the
// owner lookups use: LIST and WATCH of pods (including the streaming list
// that client-go tries first: sendInitialEvents, ended by a bookmark), GET
// of ReplicaSets and Jobs. envtest would need kube-apiserver and etcd
// binaries from the internet.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	rv       int
	pods     []*corev1.Pod
	objects  map[string]runtime.Object // "replicasets/ns/name", "jobs/ns/name"
	watchers []chan watchEvent
	// selectors are the field selectors pods were listed or watched with.
	selectors []string
	gets      []string
	// forbidden refuses every GET, as the API does without RBAC rights.
	forbidden bool
}

type watchEvent struct {
	Type   string         `json:"type"`
	Object runtime.Object `json:"object"`
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, rv: 100, objects: map[string]runtime.Object{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/pods", f.podsHandler)
	mux.HandleFunc("GET /apis/apps/v1/namespaces/{ns}/replicasets/{name}", f.getHandler("replicasets"))
	mux.HandleFunc("GET /apis/batch/v1/namespaces/{ns}/jobs/{name}", f.getHandler("jobs"))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.close)
	return f
}

func (f *fakeAPI) rest() *rest.Config { return &rest.Config{Host: f.srv.URL} }

// close ends the watches, then the server (which waits for its handlers).
func (f *fakeAPI) close() {
	f.mu.Lock()
	for _, w := range f.watchers {
		close(w)
	}
	f.watchers = nil
	f.mu.Unlock()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// addPod adds a pod, telling the open watches.
func (f *fakeAPI) addPod(p *corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	p = p.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	p.ResourceVersion = strconv.Itoa(f.rv)
	f.pods = append(f.pods, p)
	for _, w := range f.watchers {
		w <- watchEvent{Type: "ADDED", Object: p}
	}
}

func (f *fakeAPI) addObject(kind string, o metav1.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[kind+"/"+o.GetNamespace()+"/"+o.GetName()] = o.(runtime.Object)
}

func (f *fakeAPI) podsHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.selectors = append(f.selectors, q.Get("fieldSelector"))
	pods := append([]*corev1.Pod(nil), f.pods...)
	rv := strconv.Itoa(f.rv)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: rv}}
		for _, p := range pods {
			list.Items = append(list.Items, *p)
		}
		_ = json.NewEncoder(w).Encode(list)
		return
	}
	ch := make(chan watchEvent, 16)
	f.mu.Lock()
	f.watchers = append(f.watchers, ch)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, c := range f.watchers {
			if c == ch {
				f.watchers = append(f.watchers[:i], f.watchers[i+1:]...)
				break
			}
		}
	}()
	enc := json.NewEncoder(w)
	send := func(e watchEvent) bool {
		if err := enc.Encode(e); err != nil {
			return false
		}
		w.(http.Flusher).Flush()
		return true
	}
	w.WriteHeader(http.StatusOK)
	if q.Get("sendInitialEvents") == "true" {
		for _, p := range pods {
			send(watchEvent{Type: "ADDED", Object: p})
		}
		send(watchEvent{Type: "BOOKMARK", Object: &corev1.Pod{
			TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv,
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
		}})
	}
	w.(http.Flusher).Flush()
	for {
		select {
		case e, ok := <-ch:
			if !ok || !send(e) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeAPI) getHandler(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := kind + "/" + r.PathValue("ns") + "/" + r.PathValue("name")
		f.mu.Lock()
		f.gets = append(f.gets, key)
		o, ok := f.objects[key]
		forbidden := f.forbidden
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if forbidden {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
				Message: "forbidden",
			})
			return
		}
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
				Message: strings.ReplaceAll(key, "/", " ") + " not found",
			})
			return
		}
		_ = json.NewEncoder(w).Encode(o)
	}
}
