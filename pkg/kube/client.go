package kube

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// clients are REST clients of the three API groups weft reads. The typed
// clientset (k8s.io/client-go/kubernetes) would do the same, but links
// every API group of Kubernetes and its apply configurations: it doubled
// weft's binary.
type clients struct {
	core, apps, batch rest.Interface
}

func newClients(base *rest.Config) (clients, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return clients{}, fmt.Errorf("kubernetes scheme: %w", err)
		}
	}
	codecs := serializer.NewCodecFactory(scheme)
	hc, err := rest.HTTPClientFor(base)
	if err != nil {
		return clients{}, fmt.Errorf("kubernetes client: %w", err)
	}
	client := func(apiPath string, gv schema.GroupVersion) (rest.Interface, error) {
		c := rest.CopyConfig(base)
		c.APIPath = apiPath
		c.GroupVersion = &gv
		c.NegotiatedSerializer = codecs.WithoutConversion()
		return rest.RESTClientForConfigAndClient(c, hc)
	}
	var cs clients
	if cs.core, err = client("/api", corev1.SchemeGroupVersion); err != nil {
		return clients{}, fmt.Errorf("kubernetes core client: %w", err)
	}
	if cs.apps, err = client("/apis", appsv1.SchemeGroupVersion); err != nil {
		return clients{}, fmt.Errorf("kubernetes apps client: %w", err)
	}
	if cs.batch, err = client("/apis", batchv1.SchemeGroupVersion); err != nil {
		return clients{}, fmt.Errorf("kubernetes batch client: %w", err)
	}
	return cs, nil
}
