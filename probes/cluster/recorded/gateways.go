package recorded

import (
	"context"
	"fmt"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Gateways replays a Gateway list, failing as it failed when recorded.
func (c *Cluster) Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error) {
	if err := c.failed(readIstioList("gateways", namespace)); err != nil {
		return nil, err
	}
	if err := c.notExported(namespace, "Gateway (networking.istio.io)", func(o runtime.Object) bool { _, ok := o.(*networkingv1.Gateway); return ok }); err != nil {
		return nil, err
	}
	return c.Reader.Gateways(ctx, namespace)
}

// notExported fails a list of namespace when the scenario is a dump that
// holds nothing of it, or no object of the kind listed (held reports
// one): the user did not export it, which says nothing of what the
// cluster holds. A Gateway a VirtualService names there is then unknown,
// not missing.
func (c *Cluster) notExported(namespace, kind string, held func(runtime.Object) bool) error {
	if !c.s.Dump {
		return nil
	}
	holdsNamespace, holdsKind := false, false
	for _, obj := range c.s.Objects {
		holdsKind = holdsKind || held(obj)
		if m, err := meta.Accessor(obj); err == nil {
			_, isNamespace := obj.(*corev1.Namespace)
			holdsNamespace = holdsNamespace || m.GetNamespace() == namespace || isNamespace && m.GetName() == namespace
		}
	}
	switch {
	case !holdsKind:
		return fmt.Errorf("%w: the documents hold no %s at all", cluster.ErrNotInInput, kind)
	case namespace != "" && !holdsNamespace:
		return fmt.Errorf("%w: the documents hold nothing of namespace %s", cluster.ErrNotInInput, namespace)
	}
	return nil
}

// Gateways keeps the Gateways the config model read for a gateway caller.
func (r *Recorder) Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error) {
	v, err := cluster.Gateways(ctx, r.c, namespace)
	return record(r, readIstioList("gateways", namespace), v, err, pointers[*networkingv1.Gateway])
}

// addTracked adds obj to a fake clientset's tracker. The tracker guesses
// a kind's resource by English plural rules and files a Gateway under
// "gatewaies", where no list finds it: a Gateway is created under
// "gateways", the resource the clientset lists.
func addTracked(tracker k8stesting.ObjectTracker, obj runtime.Object) error {
	if gw, ok := obj.(*networkingv1.Gateway); ok {
		return tracker.Create(networkingv1.SchemeGroupVersion.WithResource("gateways"), gw, gw.Namespace)
	}
	return tracker.Add(obj)
}
