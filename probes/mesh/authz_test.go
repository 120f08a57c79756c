package mesh_test

import (
	"strings"
	"testing"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

func authzPolicy(t *testing.T, doc string) *securityv1.AuthorizationPolicy {
	t.Helper()
	var p securityv1.AuthorizationPolicy
	if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestZtunnelAuthorize(t *testing.T) {
	orders := ambientPod("shop", "orders-1", map[string]string{"app": "orders"}, enrolled, false)
	web := mesh.AuthzSource{Namespace: "shop", ServiceAccount: "web", IP: "10.244.0.21", Authenticated: true}
	waypoint := mesh.AuthzSource{Namespace: "shop", ServiceAccount: "orders-waypoint", IP: "10.244.2.30", Authenticated: true}
	plaintext := mesh.AuthzSource{Namespace: "shop", ServiceAccount: "web", IP: "10.244.0.21"}
	noIP := mesh.AuthzSource{Namespace: "shop", ServiceAccount: "web", Authenticated: true}

	allowWaypoint := authzPolicy(t, `
metadata: {name: orders-via-waypoint, namespace: shop}
spec:
  selector: {matchLabels: {app: orders}}
  action: ALLOW
  rules:
  - from: [{source: {principals: [cluster.local/ns/shop/sa/orders-waypoint]}}]`)
	allowNothing := authzPolicy(t, `
metadata: {name: allow-nothing, namespace: shop}
spec: {}`)
	denyWeb := authzPolicy(t, `
metadata: {name: no-web, namespace: shop}
spec:
  action: DENY
  rules:
  - from: [{source: {namespaces: [shop], principals: ["*/sa/web"]}}]`)
	allowGetOnly := authzPolicy(t, `
metadata: {name: get-only, namespace: shop}
spec:
  selector: {matchLabels: {app: orders}}
  action: ALLOW
  rules:
  - from: [{source: {principals: [cluster.local/ns/shop/sa/web]}}]
    to: [{operation: {methods: [GET]}}]`)
	denyPost := authzPolicy(t, `
metadata: {name: no-post, namespace: shop}
spec:
  action: DENY
  rules:
  - to: [{operation: {methods: [POST], ports: ["8080"]}}]`)
	waypointOnly := authzPolicy(t, `
metadata: {name: l7-at-waypoint, namespace: shop}
spec:
  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: orders-waypoint}]
  action: ALLOW
  rules: [{to: [{operation: {methods: [GET]}}]}]`)
	byIP := authzPolicy(t, `
metadata: {name: from-office, namespace: shop}
spec:
  action: ALLOW
  rules: [{from: [{source: {ipBlocks: [192.168.0.0/16]}}]}]`)
	meshWide := authzPolicy(t, `
metadata: {name: mesh-allow-all, namespace: istio-system}
spec:
  action: ALLOW
  rules: [{}]`)

	strict := mesh.PeerMode{Mode: mesh.ModeStrict, From: "namespace shop/strict"}
	permissive := mesh.PeerMode{Mode: mesh.ModePermissive, From: "default"}
	cases := []struct {
		name     string
		policies []*securityv1.AuthorizationPolicy
		src      mesh.AuthzSource
		peer     mesh.PeerMode
		allowed  bool
		decided  bool
		reason   string
	}{
		{"no policy", nil, web, permissive, true, true, ""},
		{"allow only the waypoint: a direct caller is refused", []*securityv1.AuthorizationPolicy{allowWaypoint}, web, permissive, false, true, mesh.RejectNoAllowMatch},
		{"allow only the waypoint: the waypoint passes", []*securityv1.AuthorizationPolicy{allowWaypoint}, waypoint, permissive, true, true, ""},
		{"allow-nothing", []*securityv1.AuthorizationPolicy{allowNothing}, web, permissive, false, true, mesh.RejectNoAllowMatch},
		{"explicit deny", []*securityv1.AuthorizationPolicy{denyWeb, meshWide}, web, permissive, false, true, mesh.RejectExplicitDeny + "shop/no-web"},
		{"an ALLOW rule with HTTP attributes never matches at ztunnel", []*securityv1.AuthorizationPolicy{allowGetOnly}, web, permissive, false, true, mesh.RejectNoAllowMatch},
		{"a DENY rule with HTTP attributes is enforced without them", []*securityv1.AuthorizationPolicy{denyPost}, web, permissive, false, true, mesh.RejectExplicitDeny + "shop/no-post"},
		{"targetRefs policies are the waypoint's", []*securityv1.AuthorizationPolicy{waypointOnly}, web, permissive, true, true, ""},
		{"ipBlocks need the source IP", []*securityv1.AuthorizationPolicy{byIP}, noIP, permissive, false, false, ""},
		{"ipBlocks against the source IP", []*securityv1.AuthorizationPolicy{byIP}, web, permissive, false, true, mesh.RejectNoAllowMatch},
		{"mesh-wide ALLOW all", []*securityv1.AuthorizationPolicy{meshWide}, web, permissive, true, true, ""},
		{"STRICT refuses plaintext first", []*securityv1.AuthorizationPolicy{meshWide}, plaintext, strict, false, true, mesh.RejectExplicitDeny + "istio-system/istio_converted_static_strict"},
		{"principals never match plaintext", []*securityv1.AuthorizationPolicy{authzPolicy(t, `
metadata: {name: any-identity, namespace: shop}
spec: {rules: [{from: [{source: {principals: ["*"]}}]}]}`)}, plaintext, permissive, false, true, mesh.RejectNoAllowMatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mesh.ZtunnelAuthorize(tc.policies, "istio-system", orders, tc.src, 8080, tc.peer)
			if v.Allowed != tc.allowed || v.Decided != tc.decided || v.Reason != tc.reason {
				t.Errorf("allowed %v decided %v reason %q (%s; policies %v), want %v %v %q", v.Allowed, v.Decided, v.Reason, v.Why, v.Policies, tc.allowed, tc.decided, tc.reason)
			}
		})
	}
	v := mesh.ZtunnelAuthorize([]*securityv1.AuthorizationPolicy{waypointOnly, allowWaypoint}, "istio-system", orders, web, 8080, permissive)
	if len(v.WaypointPolicies) != 1 || v.WaypointPolicies[0] != "shop/l7-at-waypoint" || len(v.Policies) != 1 {
		t.Errorf("policies %v, waypoint policies %v: want the selector policy at ztunnel and the targetRefs one at the waypoint", v.Policies, v.WaypointPolicies)
	}
}

// A bare serviceAccounts entry names a service account in the policy's
// namespace (istiod's stringToServiceAccountMatch(..., ruleNamespace)), not
// in the source's.
func TestZtunnelAuthorizeBareServiceAccountIsThePolicyNamespaces(t *testing.T) {
	orders := ambientPod("shop", "orders-1", map[string]string{"app": "orders"}, enrolled, false)
	permissive := mesh.PeerMode{Mode: mesh.ModePermissive, From: "default"}
	allowWeb := authzPolicy(t, `
metadata: {name: allow-web, namespace: shop}
spec:
  action: ALLOW
  rules: [{from: [{source: {serviceAccounts: [web]}}]}]`)
	denyNotWeb := authzPolicy(t, `
metadata: {name: only-web, namespace: shop}
spec:
  action: DENY
  rules: [{from: [{source: {notServiceAccounts: [web]}}]}]`)
	allowExplicit := authzPolicy(t, `
metadata: {name: allow-jobs-web, namespace: shop}
spec:
  action: ALLOW
  rules: [{from: [{source: {serviceAccounts: [jobs/web]}}]}]`)
	shopWeb := mesh.AuthzSource{Namespace: "shop", ServiceAccount: "web", Authenticated: true}
	jobsWeb := mesh.AuthzSource{Namespace: "jobs", ServiceAccount: "web", Authenticated: true}
	cases := []struct {
		name     string
		policies []*securityv1.AuthorizationPolicy
		src      mesh.AuthzSource
		allowed  bool
		reason   string
	}{
		{"web in the policy's namespace is admitted", []*securityv1.AuthorizationPolicy{allowWeb}, shopWeb, true, ""},
		{"web in another namespace is not shop/web", []*securityv1.AuthorizationPolicy{allowWeb}, jobsWeb, false, mesh.RejectNoAllowMatch},
		{"notServiceAccounts web spares only shop/web", []*securityv1.AuthorizationPolicy{denyNotWeb}, shopWeb, true, ""},
		{"notServiceAccounts web denies jobs/web", []*securityv1.AuthorizationPolicy{denyNotWeb}, jobsWeb, false, mesh.RejectExplicitDeny + "shop/only-web"},
		{"an explicit namespace is kept", []*securityv1.AuthorizationPolicy{allowExplicit}, jobsWeb, true, ""},
		{"an explicit namespace is kept, shop/web is not jobs/web", []*securityv1.AuthorizationPolicy{allowExplicit}, shopWeb, false, mesh.RejectNoAllowMatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mesh.ZtunnelAuthorize(tc.policies, "istio-system", orders, tc.src, 8080, permissive)
			if !v.Decided || v.Allowed != tc.allowed || v.Reason != tc.reason {
				t.Errorf("allowed %v decided %v reason %q (%s), want %v %q", v.Allowed, v.Decided, v.Reason, v.Why, tc.allowed, tc.reason)
			}
		})
	}
}

// A selector policy in the root namespace selects matching workloads in
// every namespace (istiod: the policy's namespace is the root namespace or
// the workload's, then the selector must match).
func TestZtunnelAuthorizeRootNamespaceSelectorIsMeshWide(t *testing.T) {
	orders := ambientPod("shop", "orders-1", map[string]string{"app": "orders"}, enrolled, false)
	cart := ambientPod("shop", "cart-1", map[string]string{"app": "cart"}, enrolled, false)
	permissive := mesh.PeerMode{Mode: mesh.ModePermissive, From: "default"}
	web := mesh.AuthzSource{Namespace: "shop", ServiceAccount: "web", Authenticated: true}
	rootDeny := authzPolicy(t, `
metadata: {name: no-web-to-orders, namespace: mesh-root}
spec:
  selector: {matchLabels: {app: orders}}
  action: DENY
  rules: [{from: [{source: {principals: ["*/sa/web"]}}]}]`)
	otherNS := authzPolicy(t, `
metadata: {name: no-web-to-orders, namespace: billing}
spec:
  selector: {matchLabels: {app: orders}}
  action: DENY
  rules: [{from: [{source: {principals: ["*/sa/web"]}}]}]`)
	cases := []struct {
		name     string
		policies []*securityv1.AuthorizationPolicy
		pod      *corev1.Pod
		allowed  bool
		reason   string
		applied  int
	}{
		{"a root selector policy applies to a matching pod elsewhere", []*securityv1.AuthorizationPolicy{rootDeny}, orders, false, mesh.RejectExplicitDeny + "mesh-root/no-web-to-orders", 1},
		{"a root selector policy skips a pod it does not select", []*securityv1.AuthorizationPolicy{rootDeny}, cart, true, "", 0},
		{"a selector policy in a third namespace does not apply", []*securityv1.AuthorizationPolicy{otherNS}, orders, true, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mesh.ZtunnelAuthorize(tc.policies, "mesh-root", tc.pod, web, 8080, permissive)
			if !v.Decided || v.Allowed != tc.allowed || v.Reason != tc.reason || len(v.Policies) != tc.applied {
				t.Errorf("allowed %v decided %v reason %q policies %v (%s), want %v %q and %d policies", v.Allowed, v.Decided, v.Reason, v.Policies, v.Why, tc.allowed, tc.reason, tc.applied)
			}
		})
	}
}

// A policy annotated istio.io/dry-run: "true" is not enforced: istiod
// leaves it out of ztunnel's policies (or, with
// AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY, ztunnel only logs it), and a
// waypoint only shadows it.
func TestZtunnelAuthorizeSkipsDryRunPolicies(t *testing.T) {
	orders := ambientPod("shop", "orders-1", map[string]string{"app": "orders"}, enrolled, false)
	permissive := mesh.PeerMode{Mode: mesh.ModePermissive, From: "default"}
	web := mesh.AuthzSource{Namespace: "shop", ServiceAccount: "web", Authenticated: true}
	dryDeny := authzPolicy(t, `
metadata: {name: deny-all, namespace: shop, annotations: {istio.io/dry-run: "true"}}
spec:
  action: DENY
  rules: [{}]`)
	dryAllowNothing := authzPolicy(t, `
metadata: {name: allow-nothing, namespace: istio-system, annotations: {istio.io/dry-run: "true"}}
spec: {}`)
	dryWaypoint := authzPolicy(t, `
metadata: {name: l7-at-waypoint, namespace: shop, annotations: {istio.io/dry-run: "true"}}
spec:
  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: orders-waypoint}]
  action: ALLOW
  rules: [{to: [{operation: {methods: [GET]}}]}]`)
	notDry := authzPolicy(t, `
metadata: {name: deny-all, namespace: shop, annotations: {istio.io/dry-run: "false"}}
spec:
  action: DENY
  rules: [{}]`)

	v := mesh.ZtunnelAuthorize([]*securityv1.AuthorizationPolicy{dryDeny, dryAllowNothing, dryWaypoint}, "istio-system", orders, web, 8080, permissive)
	if !v.Decided || !v.Allowed || len(v.Policies) != 0 || len(v.WaypointPolicies) != 0 {
		t.Errorf("dry-run policies: allowed %v decided %v reason %q policies %v waypoint policies %v (%s), want admitted with none enforced", v.Allowed, v.Decided, v.Reason, v.Policies, v.WaypointPolicies, v.Why)
	}
	want := []string{"ALLOW istio-system/allow-nothing", "ALLOW shop/l7-at-waypoint", "DENY shop/deny-all"}
	if strings.Join(v.DryRunPolicies, ",") != strings.Join(want, ",") {
		t.Errorf("dry-run policies listed %v, want %v", v.DryRunPolicies, want)
	}
	v = mesh.ZtunnelAuthorize([]*securityv1.AuthorizationPolicy{notDry}, "istio-system", orders, web, 8080, permissive)
	if v.Allowed || v.Reason != mesh.RejectExplicitDeny+"shop/deny-all" {
		t.Errorf("dry-run \"false\": allowed %v reason %q, want denied by shop/deny-all", v.Allowed, v.Reason)
	}
}
