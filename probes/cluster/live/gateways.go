package live

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

var _ cluster.GatewayAPILister = (*Cluster)(nil)

// gatewayCodecs decode the Gateway API's objects of the versions listed
// (v1, and v1beta1 for ReferenceGrants, as istiod lists them). A REST
// client of client-go is all a list of one kind takes; the Gateway API's
// generated clientset would add every kind of every version to the
// binary.
var gatewayCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	for _, install := range []func(*runtime.Scheme) error{gatewayv1.Install, gatewayv1beta1.Install} {
		if err := install(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s)
}()

// gatewayREST is a REST client for the Gateway API group at version.
func (c *Cluster) gatewayREST(version string) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.GroupVersion = &schema.GroupVersion{Group: gatewayv1.GroupName, Version: version}
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = gatewayCodecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway API client: %w", err)
	}
	return rc, nil
}

// GatewayAPIGateways lists a namespace's Gateway API Gateways ("" for
// every namespace; a waypoint is one). A cluster without the Gateway API
// answers 404 for the kind.
func (c *Cluster) GatewayAPIGateways(ctx context.Context, namespace string) ([]*gatewayv1.Gateway, error) {
	rc, err := c.gatewayREST("v1")
	if err != nil {
		return nil, err
	}
	var list gatewayv1.GatewayList
	if err := rc.Get().Namespace(namespace).Resource("gateways").Do(ctx).Into(&list); err != nil {
		return nil, err
	}
	out := make([]*gatewayv1.Gateway, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// GatewayAPIList lists one Gateway API kind (cluster.GatewayAPILister) at
// the version istiod watches, each object as its v1 Go type.
func (c *Cluster) GatewayAPIList(ctx context.Context, kind cluster.GatewayAPIKind, namespace string) ([]runtime.Object, error) {
	rc, err := c.gatewayREST(kind.Version)
	if err != nil {
		return nil, err
	}
	req := rc.Get().Resource(kind.Resource)
	if !kind.ClusterScoped {
		req = req.Namespace(namespace)
	}
	var out []runtime.Object
	switch kind {
	case cluster.HTTPRoutes:
		var list gatewayv1.HTTPRouteList
		err = req.Do(ctx).Into(&list)
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case cluster.GRPCRoutes:
		var list gatewayv1.GRPCRouteList
		err = req.Do(ctx).Into(&list)
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case cluster.TLSRoutes:
		var list gatewayv1.TLSRouteList
		err = req.Do(ctx).Into(&list)
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case cluster.TCPRoutes:
		var list gatewayv1.TCPRouteList
		err = req.Do(ctx).Into(&list)
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case cluster.ReferenceGrants:
		var list gatewayv1beta1.ReferenceGrantList
		err = req.Do(ctx).Into(&list)
		for i := range list.Items {
			g := gatewayv1.ReferenceGrant(list.Items[i])
			out = append(out, &g)
		}
	case cluster.GatewayClasses:
		var list gatewayv1.GatewayClassList
		err = req.Do(ctx).Into(&list)
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	default:
		return nil, fmt.Errorf("%w: no list of %s", cluster.ErrNotFound, kind)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
