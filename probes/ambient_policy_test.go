package probes

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// ambientPolicyWorld is ambientWorld edited by edit (old, new pairs),
// with docs added; Gateway API Gateways are served by the ambientFake.
func ambientPolicyWorld(t *testing.T, edit []string, docs ...string) *ambientFake {
	t.Helper()
	world := ambientWorld
	for i := 0; i+1 < len(edit); i += 2 {
		if !strings.Contains(world, edit[i]) {
			t.Fatalf("the ambient world has no %q", edit[i])
		}
		world = strings.Replace(world, edit[i], edit[i+1], 1)
	}
	a := &ambientFake{}
	var rest []runtime.Object
	for _, o := range decodeObjects(t, append([]string{world}, docs...)...) {
		if gw, ok := o.(*gatewayv1.Gateway); ok {
			a.gateways = append(a.gateways, gw)
			continue
		}
		rest = append(rest, o)
	}
	a.fakeCluster = newFakeCluster(t, rest...)
	return a
}

// evidenceVerdicts maps each evidence row's hop and check to its verdict.
func evidenceVerdicts(r Result) map[string]string {
	out := map[string]string{}
	for _, row := range r.Evidence.Rows {
		out[row[0]+" | "+row[1]] = row[2]
	}
	return out
}

// A sidecar or a gateway sends HBONE only to a pod enrolled in ambient; to
// a sidecar pod (tlsMode=istio, tunnel label or not) istiod gives it
// classic mTLS on the app's port, unless PILOT_PREFER_SENDING_HBONE. A
// NetworkPolicy that admits the app's port and not 15008 drops the hops
// to the ambient pods only.
func TestAmbientPolicySidecarCallerSendsHBONEOnlyToAmbientPods(t *testing.T) {
	mixed := `
apiVersion: v1
kind: Pod
metadata: {name: orders-3, namespace: shop, labels: {app: orders, networking.istio.io/tunnel: http, security.istio.io/tlsMode: istio}}
spec: {nodeName: worker-c, serviceAccountName: orders, containers: [{name: orders, ports: [{name: http, containerPort: 8080}]}, {name: istio-proxy}]}
status: {phase: Running, podIP: 10.244.2.10, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client-1, namespace: shop, labels: {app: web, networking.istio.io/tunnel: http, security.istio.io/tlsMode: istio}}
spec: {nodeName: worker-a, serviceAccountName: web, containers: [{name: client}, {name: istio-proxy}]}
status: {phase: Running, podIP: 10.244.0.22, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: ingress-1, namespace: shop, labels: {app: web, istio: ingressgateway}}
spec: {nodeName: worker-a, serviceAccountName: web, containers: [{name: istio-proxy, args: [proxy, router]}]}
status: {phase: Running, podIP: 10.244.0.23, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: orders-from-web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: 8080}]}]
`
	for _, caller := range []string{"client-1", "ingress-1"} {
		t.Run(caller, func(t *testing.T) {
			target := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: caller}}
			r := runChecked(t, AmbientPolicyProbe{}, ambientPolicyWorld(t, nil, mixed), target)
			want := []string{"shop/" + caller + " -> shop/orders-1 TCP 15008", "shop/" + caller + " -> shop/orders-2 TCP 15008"}
			if !reflect.DeepEqual(r.Facts["hbone_blocked_hops"], want) || r.Facts["hbone_netpol_blocked"] != true {
				t.Errorf("blocked %v (%v), want %v\n%s", r.Facts["hbone_blocked_hops"], r.Facts["hbone_netpol_blocked"], want, r.Summary)
			}
			if v := evidenceVerdicts(r)["shop/"+caller+" -> shop/orders-3 TCP 8080 | NetworkPolicy"]; v != "admitted" {
				t.Errorf("mTLS to the sidecar pod's port 8080: %q, want admitted\n%v", v, r.Evidence.Rows)
			}
		})
	}
}

// The hops to and from the waypoint are judged with the waypoint's
// namespace: a namespaceSelector peer matches it, or does not, as for any
// other pod; it is unknown only when that namespace could not be read.
func TestAmbientPolicyWaypointHopsKnowTheWaypointsNamespace(t *testing.T) {
	waypointIn := func(ns string) string {
		return `
apiVersion: v1
kind: Namespace
metadata: {name: waypoints, labels: {kubernetes.io/metadata.name: waypoints}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: orders-waypoint, namespace: ` + ns + `}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE, allowedRoutes: {namespaces: {from: All}}}]}
status: {addresses: [{type: Hostname, value: orders-waypoint.` + ns + `.svc.cluster.local}]}
---
apiVersion: v1
kind: Pod
metadata: {name: orders-waypoint-5c8d-x7k2p, namespace: ` + ns + `, labels: {gateway.networking.k8s.io/gateway-name: orders-waypoint, gateway.istio.io/managed: istio.io-mesh-controller}}
spec: {nodeName: worker-b, serviceAccountName: orders-waypoint, containers: [{name: istio-proxy}]}
status: {phase: Running, podIP: 10.244.1.30, conditions: [{type: Ready, status: "True"}]}
`
	}
	// The Service's pods admit HBONE from namespace NS only; web's egress
	// reaches HBONE in namespace NS only.
	policies := func(ns string) string {
		return `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: orders-hbone, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ` + ns + `}}}], ports: [{port: 15008}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-egress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ` + ns + `}}}], ports: [{port: 15008}]}]
`
	}
	useWaypoint := func(ns string) []string {
		return []string{"metadata: {name: orders, namespace: shop}",
			"metadata: {name: orders, namespace: shop, labels: {istio.io/use-waypoint: orders-waypoint, istio.io/use-waypoint-namespace: " + ns + "}}"}
	}
	for _, tc := range []struct {
		name, waypointNS, admittedNS string
		blocked                      any
		hops                         []string
	}{
		{"waypoint in the Service's namespace, policies admit another", "shop", "frontend", true,
			[]string{"shop/orders-waypoint-5c8d-x7k2p -> shop/orders-1 TCP 15008", "shop/orders-waypoint-5c8d-x7k2p -> shop/orders-2 TCP 15008", "shop/web-1 -> shop/orders-waypoint-5c8d-x7k2p TCP 15008"}},
		{"waypoint in the Service's namespace, policies admit it", "shop", "shop", false, []string{}},
		{"waypoint in a namespace of its own, policies admit it", "waypoints", "waypoints", false, []string{}},
		{"waypoint in a namespace of its own, policies admit another", "waypoints", "shop", true,
			[]string{"waypoints/orders-waypoint-5c8d-x7k2p -> shop/orders-1 TCP 15008", "waypoints/orders-waypoint-5c8d-x7k2p -> shop/orders-2 TCP 15008", "shop/web-1 -> waypoints/orders-waypoint-5c8d-x7k2p TCP 15008"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ambientPolicyWorld(t, useWaypoint(tc.waypointNS), waypointIn(tc.waypointNS), policies(tc.admittedNS))
			r := runChecked(t, AmbientPolicyProbe{}, c, webToOrders)
			if r.Facts["hbone_netpol_blocked"] != tc.blocked || !reflect.DeepEqual(r.Facts["hbone_blocked_hops"], tc.hops) {
				t.Errorf("blocked %v %v, want %v %v\n%s\n%v", r.Facts["hbone_netpol_blocked"], r.Facts["hbone_blocked_hops"], tc.blocked, tc.hops, r.Summary, r.Evidence.Rows)
			}
			if !strings.Contains(r.Summary, "through waypoint "+tc.waypointNS+"/orders-waypoint") {
				t.Errorf("not judged through the waypoint: %s", r.Summary)
			}
		})
	}
}

// A hop whose port is unknown (the Service's named targetPort names no
// port of the pod) is no verdict: not DROPPED, not admitted.
func TestAmbientPolicyUnresolvedPortIsUnknown(t *testing.T) {
	docs := `
apiVersion: v1
kind: Pod
metadata: {name: orders-3, namespace: shop, labels: {app: orders, security.istio.io/tlsMode: istio}}
spec: {nodeName: worker-c, serviceAccountName: orders, containers: [{name: orders}, {name: istio-proxy}]}
status: {phase: Running, podIP: 10.244.2.10, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client-1, namespace: shop, labels: {app: web}}
spec: {nodeName: worker-a, serviceAccountName: web, containers: [{name: client}, {name: istio-proxy}]}
status: {phase: Running, podIP: 10.244.0.22, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: orders-from-web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: 15008}]}]
`
	named := []string{"ports: [{name: http, port: 8080, targetPort: 8080}]", "ports: [{name: http, port: 8080, targetPort: http}]"}
	target := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "client-1"}}
	r := runChecked(t, AmbientPolicyProbe{}, ambientPolicyWorld(t, named, docs), target)
	if _, ok := r.Facts["hbone_netpol_blocked"]; ok || len(r.Facts["hbone_blocked_hops"].([]string)) != 0 || r.Status != StatusWarn {
		t.Errorf("%s %s: blocked %v %v, want unknown and none", r.Status, r.Summary, r.Facts["hbone_netpol_blocked"], r.Facts["hbone_blocked_hops"])
	}
	got := evidenceVerdicts(r)
	for hop, want := range map[string]string{
		"shop/client-1 -> shop/orders-1 TCP 15008 | NetworkPolicy": "admitted",
		"shop/client-1 -> shop/orders-3 TCP 0 | NetworkPolicy":     "unknown",
	} {
		if got[hop] != want {
			t.Errorf("%s: %q, want %q\n%v", hop, got[hop], want, r.Evidence.Rows)
		}
	}
}

// The refusal names the arrival ztunnel refuses, and the policies are
// those at its pod, not at the last one judged.
func TestAmbientPolicyRefusalNamesTheRefusedArrival(t *testing.T) {
	// orders-1 alone is held to an ALLOW policy that admits another caller.
	docs := `
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: orders-1-from-checkout, namespace: shop}
spec:
  selector: {matchLabels: {app: orders, shard: "1"}}
  rules: [{from: [{source: {principals: [cluster.local/ns/shop/sa/checkout]}}]}]
`
	edit := []string{"metadata: {name: orders-1, namespace: shop, labels: {app: orders}", `metadata: {name: orders-1, namespace: shop, labels: {app: orders, shard: "1"}`}
	r := runChecked(t, AmbientPolicyProbe{}, ambientPolicyWorld(t, edit, docs), webToOrders)
	if r.Facts["authz_denied"] != true || !strings.Contains(r.Summary, "refuses the caller web-1 at shop/orders-1: allow policies exist, but none allowed") ||
		!reflect.DeepEqual(r.Facts["authz_policies"], []string{"ALLOW shop/orders-1-from-checkout"}) {
		t.Errorf("%s %s\npolicies %v\n%v", r.Status, r.Summary, r.Facts["authz_policies"], r.Evidence.Rows)
	}
}

// A waypoint's pod named as the caller tunnels to the pods that accept
// HBONE, as it does on the waypoint's hop of an ambient caller's path.
func TestAmbientPolicyWaypointCallerSendsHBONE(t *testing.T) {
	docs := `
apiVersion: v1
kind: Pod
metadata: {name: orders-waypoint-5c8d-x7k2p, namespace: shop, labels: {gateway.networking.k8s.io/gateway-name: orders-waypoint, gateway.istio.io/managed: istio.io-mesh-controller}}
spec: {nodeName: worker-b, serviceAccountName: orders-waypoint, containers: [{name: istio-proxy, args: [proxy, waypoint]}]}
status: {phase: Running, podIP: 10.244.1.30, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: orders-8080, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress: [{ports: [{port: 8080}]}]
`
	target := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "orders-waypoint-5c8d-x7k2p"}}
	r := runChecked(t, AmbientPolicyProbe{}, ambientPolicyWorld(t, nil, docs), target)
	want := []string{"shop/orders-waypoint-5c8d-x7k2p -> shop/orders-1 TCP 15008", "shop/orders-waypoint-5c8d-x7k2p -> shop/orders-2 TCP 15008"}
	if !reflect.DeepEqual(r.Facts["hbone_blocked_hops"], want) {
		t.Errorf("blocked %v, want %v\n%s", r.Facts["hbone_blocked_hops"], want, r.Evidence.Rows)
	}
}

// istiod makes a waypoint of any Gateway with a status address that a
// Service's istio.io/use-waypoint names (gatewayToWaypointTransform reads
// every Gateway): one that is no waypoint is bound all the same, and
// ztunnel tunnels to its address on 15008, where nothing takes HBONE.
// Without an address nothing is bound. Its listener's default
// allowedRoutes (Same) still decide who may bind.
func TestDataPlaneServiceNamingAGatewayThatIsNoWaypoint(t *testing.T) {
	gatewayIn := func(ns, address string) string {
		doc := `
apiVersion: v1
kind: Namespace
metadata: {name: istio-ingress, labels: {kubernetes.io/metadata.name: istio-ingress}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public, namespace: ` + ns + `}
spec: {gatewayClassName: istio, listeners: [{name: http, port: 80, protocol: HTTP}]}
`
		if address != "" {
			doc += "status: {addresses: [{type: IPAddress, value: " + address + "}]}\n"
		}
		return doc
	}
	useWaypoint := func(ns string) []string {
		return []string{"metadata: {name: orders, namespace: shop}",
			"metadata: {name: orders, namespace: shop, labels: {istio.io/use-waypoint: public, istio.io/use-waypoint-namespace: " + ns + "}}"}
	}
	for _, tc := range []struct {
		name, ns, address, state, why string
	}{
		{"with a status address", "shop", "10.96.40.7", "not-waypoint", "istiod binds the Service to it"},
		{"without a status address", "shop", "", "not-waypoint", "istiod binds nothing"},
		{"in another namespace, whose default allowedRoutes refuse the Service's", "istio-ingress", "10.96.40.7", "denied", "AttachmentDenied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ambientPolicyWorld(t, useWaypoint(tc.ns), gatewayIn(tc.ns, tc.address))
			r := runChecked(t, DataPlaneProbe{}, c, webToOrders)
			if r.Facts["waypoint_state"] != tc.state || !strings.Contains(r.Summary, tc.why) || r.Status != StatusFail {
				t.Errorf("%s %v: %s\nwant %s: ...%s", r.Status, r.Facts["waypoint_state"], r.Summary, tc.state, tc.why)
			}
			if tc.state == "not-waypoint" && tc.address != "" && !strings.Contains(r.Summary, "connections to the Service fail") {
				t.Errorf("a bound Gateway that is no waypoint: %s", r.Summary)
			}
			if tc.state == "not-waypoint" && tc.address == "" && !strings.Contains(r.Summary, "straight to the pods") {
				t.Errorf("a Gateway that is no waypoint and has no address: %s", r.Summary)
			}
		})
	}
}

// A pending caller sends nothing until its node's ztunnel proxies it, then
// HBONE on 15008: a NetworkPolicy admitting 15008 only is no block for it.
// Judged as plaintext on 8080, it made the ztunnel that is down look like a
// NetworkPolicy drop.
func TestAmbientPolicyPendingCallerTakesTheHBONEPath(t *testing.T) {
	hboneOnly := `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: orders-hbone, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress: [{ports: [{port: 15008}]}]
`
	pending := []string{"metadata: {name: web-1, namespace: shop, labels: {app: web}, annotations: {ambient.istio.io/redirection: enabled}}",
		"metadata: {name: web-1, namespace: shop, labels: {app: web}, annotations: {ambient.istio.io/redirection: pending}}"}
	r := runChecked(t, AmbientPolicyProbe{}, ambientPolicyWorld(t, pending, hboneOnly), webToOrders)
	if r.Facts["hbone_netpol_blocked"] != false {
		t.Errorf("pending caller: hbone_netpol_blocked %v, blocked hops %v\n%s", r.Facts["hbone_netpol_blocked"], r.Facts["hbone_blocked_hops"], r.Summary)
	}
}
