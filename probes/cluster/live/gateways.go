package live

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gatewayCodecs decode the Gateway API's v1 objects. A REST client of
// client-go is all a list of one kind takes; the Gateway API's generated
// clientset would add every kind of every version to the binary.
var gatewayCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := gatewayv1.Install(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s)
}()

// GatewayAPIGateways lists a namespace's Gateway API Gateways (a waypoint
// is one). A cluster without the Gateway API answers 404 for the kind.
func (c *Cluster) GatewayAPIGateways(ctx context.Context, namespace string) ([]*gatewayv1.Gateway, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.GroupVersion = &schema.GroupVersion{Group: gatewayv1.GroupName, Version: "v1"}
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = gatewayCodecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway API client: %w", err)
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
