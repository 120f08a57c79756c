package mesh_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// gatewayAPIView is the Gateway API gateway's view of orders over
// gatewayapi-base.yaml and file, with edit applied to the Config first.
func gatewayAPIView(t *testing.T, file string, edit func(*mesh.Config)) *mesh.View {
	t.Helper()
	files := []string{"base.yaml", "gatewayapi-base.yaml"}
	if file != "" {
		files = append(files, file)
	}
	objs := meshtest.Objects(t, "testdata/model", files...)
	c := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	if edit != nil {
		edit(c)
	}
	v, err := c.ViewFor(meshtest.CallerFrom(t, objs, c, meshtest.APIGW), "orders.shop.svc.cluster.local", 8080)
	if err != nil {
		t.Fatal(err)
	}
	if v.Gateway == nil || v.Gateway.API == nil {
		t.Fatalf("no Gateway API binding: %v", v.Chain())
	}
	return v
}

func routeOf(t *testing.T, v *mesh.View, ref string) mesh.RouteVerdict {
	t.Helper()
	for _, r := range v.Gateway.API.Routes {
		if r.Route == ref {
			return r
		}
	}
	t.Fatalf("no route %s among %+v", ref, v.Gateway.API.Routes)
	return mesh.RouteVerdict{}
}

// Not read is not absent: a kind, or a namespace of it, that was not read
// leaves what depends on it undecided, never "none".
func TestGatewayAPINotReadIsNotAbsent(t *testing.T) {
	t.Run("routes not read", func(t *testing.T) {
		v := gatewayAPIView(t, "", func(c *mesh.Config) {
			c.GatewayAPI.HTTPRoutes = nil
			c.GatewayAPI.Unread = map[string]string{mesh.KindHTTPRoute: "the documents hold no HTTPRoute"}
		})
		if !strings.Contains(strings.Join(v.Gateway.API.Unknown, " "), "HTTPRoutes: the documents hold no HTTPRoute") {
			t.Errorf("unknown %v: say the HTTPRoutes were not read", v.Gateway.API.Unknown)
		}
	})
	t.Run("grants of the backend's namespace not read", func(t *testing.T) {
		v := gatewayAPIView(t, "gatewayapi-ref-not-permitted.yaml", func(c *mesh.Config) {
			c.GatewayAPI.Read = map[string]map[string]bool{mesh.KindReferenceGrant: {"web": true}}
		})
		for _, b := range routeOf(t, v, "HTTPRoute web/orders-from-web").Backends {
			if b.Invalid != "" || b.Unknown == "" {
				t.Errorf("%s: invalid %q, unknown %q: shop's ReferenceGrants were not read, so whether it is permitted is undecided", b, b.Invalid, b.Unknown)
			}
		}
	})
	t.Run("the parent Gateway's namespace not read", func(t *testing.T) {
		v := gatewayAPIView(t, "gatewayapi-not-allowed-by-listeners.yaml", func(c *mesh.Config) {
			c.GatewayAPI.Gateways = nil // shop's were not read
			c.GatewayAPI.Read = map[string]map[string]bool{mesh.KindGateway: {"web": true}}
		})
		for _, p := range routeOf(t, v, "HTTPRoute web/orders-web").Parents {
			if p.Unknown == "" || p.Reason != "" || p.NoStatus != "" {
				t.Errorf("parent %s: %+v; the Gateways of shop were not read, so the parent is undecided", p.Parent(), p)
			}
		}
	})
	t.Run("a backend Service not read", func(t *testing.T) {
		v := gatewayAPIView(t, "gatewayapi-backend-not-found.yaml", func(c *mesh.Config) { c.AllServices = false })
		for _, b := range routeOf(t, v, "HTTPRoute shop/orders").Backends {
			if b.Name == "orders-canary" && (b.Invalid != "" || b.Unknown == "") {
				t.Errorf("%s: invalid %q, unknown %q: orders-canary was not looked up", b, b.Invalid, b.Unknown)
			}
		}
	})
	t.Run("a backend Service looked up and absent", func(t *testing.T) {
		v := gatewayAPIView(t, "gatewayapi-backend-not-found.yaml", func(c *mesh.Config) {
			c.AllServices = false
			c.ServicesAbsent = map[string]bool{"orders-canary.shop.svc.cluster.local": true}
		})
		for _, b := range routeOf(t, v, "HTTPRoute shop/orders").Backends {
			if b.Name == "orders-canary" && b.Invalid != mesh.BackendNotFound {
				t.Errorf("%s: invalid %q, unknown %q: want BackendNotFound", b, b.Invalid, b.Unknown)
			}
		}
	})
}

// What istiod wrote is its verdict at the object's generation; a stale
// condition is not.
func TestGatewayAPIStatus(t *testing.T) {
	setStatus := func(generation, observed int64, status, reason string) func(*mesh.Config) {
		return func(c *mesh.Config) {
			r := c.GatewayAPI.HTTPRoutes[0]
			r.Generation = generation
			r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "public"}, ControllerName: mesh.ControllerIstio,
				Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionStatus(status), Reason: reason, ObservedGeneration: observed}}}}
		}
	}
	v := gatewayAPIView(t, "", setStatus(3, 3, "False", mesh.ReasonNotAllowedByListeners))
	p := routeOf(t, v, "HTTPRoute shop/orders").Parents[0]
	if acc, fromStatus := p.IstiodAccepted(); acc || !fromStatus || !p.Accepted {
		t.Errorf("istiod wrote Accepted False at the route's generation: IstiodAccepted %v (from status %v), model %v", acc, fromStatus, p.Accepted)
	}
	v = gatewayAPIView(t, "", setStatus(3, 2, "False", mesh.ReasonNotAllowedByListeners))
	p = routeOf(t, v, "HTTPRoute shop/orders").Parents[0]
	if acc, fromStatus := p.IstiodAccepted(); !acc || fromStatus {
		t.Errorf("a stale status (observedGeneration 2 of 3) is not istiod's verdict: IstiodAccepted %v from status %v", acc, fromStatus)
	}
}

// A Gateway changed since istiod last wrote its status: what istiod wrote
// for its routes was judged on the Gateway before, so the model decides.
func TestGatewayAPIRouteStatusStaleWithItsGateway(t *testing.T) {
	edit := func(gatewayGeneration int64) func(*mesh.Config) {
		return func(c *mesh.Config) {
			gw := c.GatewayAPI.Gateways[0]
			gw.Generation = gatewayGeneration
			gw.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", ObservedGeneration: 1}}
			r := c.GatewayAPI.HTTPRoutes[0]
			r.Generation = 1
			r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "public"}, ControllerName: mesh.ControllerIstio,
				Conditions: []metav1.Condition{{Type: "Accepted", Status: "False", Reason: mesh.ReasonNotAllowedByListeners, ObservedGeneration: 1}}}}
		}
	}
	p := routeOf(t, gatewayAPIView(t, "", edit(1)), "HTTPRoute shop/orders").Parents[0]
	if acc, fromStatus := p.IstiodAccepted(); acc || !fromStatus {
		t.Errorf("Gateway at istiod's generation: IstiodAccepted %v from status %v, want istiod's Accepted False", acc, fromStatus)
	}
	p = routeOf(t, gatewayAPIView(t, "", edit(2)), "HTTPRoute shop/orders").Parents[0]
	if acc, fromStatus := p.IstiodAccepted(); !acc || fromStatus {
		t.Errorf("Gateway changed (generation 2, observed 1): IstiodAccepted %v from status %v, want the model's Accepted", acc, fromStatus)
	}
}

// A same-namespace certificate is not read (no Secrets): the listener's
// status decides whether istiod programs it.
func TestGatewayAPIListenerCertificateStatus(t *testing.T) {
	edit := func(status string) func(*mesh.Config) {
		return func(c *mesh.Config) {
			gw := c.GatewayAPI.Gateways[0]
			mode := gatewayv1.TLSModeTerminate
			gw.Spec.Listeners = []gatewayv1.Listener{{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: &mode, CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "shop-cert"}}}}}
			if status != "" {
				gw.Status.Listeners = []gatewayv1.ListenerStatus{{Name: "https", Conditions: []metav1.Condition{
					{Type: "Programmed", Status: metav1.ConditionStatus(status), Reason: "Invalid"},
					{Type: "ResolvedRefs", Status: metav1.ConditionStatus(status), Reason: "InvalidCertificateRef", Message: "invalid certificate reference /Secret/shop-cert., secret shop/shop-cert not found"},
				}}}
			}
		}
	}
	l := gatewayAPIView(t, "", edit("")).Gateway.API.Gateway.Listeners[0]
	if _, known, _ := l.Programmed(); known {
		t.Errorf("listener %+v: without status, whether its Secret exists is not known", l)
	}
	l = gatewayAPIView(t, "", edit("False")).Gateway.API.Gateway.Listeners[0]
	if p, known, why := l.Programmed(); p || !known || !strings.Contains(why, "InvalidCertificateRef") {
		t.Errorf("listener programmed %v known %v (%s): istiod reports it not Programmed", p, known, why)
	}
}

// The listener conditions istiod's buildListener writes, as the lab's
// istiod wrote them (TestGatewayAPIAgainstIstiod): a certificateRef to
// another namespace without a ReferenceGrant is Programmed False Invalid;
// its ResolvedRefs and Accepted depend on whether the Secret exists (the
// lab's istiod, its Secret absent, wrote ResolvedRefs False
// InvalidCertificateRef and Accepted True, where the model said
// RefNotPermitted); an unsupported protocol leaves Programmed True.
func TestGatewayAPIListenerConditions(t *testing.T) {
	conds := func(l mesh.APIListener) string {
		cs, known := l.Conditions()
		if !known {
			return "unknown"
		}
		var out []string
		for _, c := range cs {
			if c.Unknown != "" {
				out = append(out, c.Type+" unknown")
				continue
			}
			out = append(out, c.Type+" "+c.Status+" "+c.Reason)
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		file string
		edit func(*mesh.Config)
		want string
	}{
		{"", nil, "Accepted True Accepted, Programmed True Programmed, ResolvedRefs True ResolvedRefs"},
		{"gatewayapi-cert-ref-not-permitted.yaml", nil, "Accepted unknown, Programmed False Invalid, ResolvedRefs unknown"},
		{"", func(c *mesh.Config) { c.GatewayAPI.Gateways[0].Spec.Listeners[0].Protocol = "UDP" },
			"Accepted False UnsupportedProtocol, Programmed True Programmed, ResolvedRefs True ResolvedRefs"},
	} {
		l := gatewayAPIView(t, tc.file, tc.edit).Gateway.API.Gateway.Listeners[0]
		if got := conds(l); got != tc.want {
			t.Errorf("%s: listener %s conditions %s, want %s", tc.file, l.Ref(), got, tc.want)
		}
	}
}
