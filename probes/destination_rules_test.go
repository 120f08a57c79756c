package probes

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var drEpoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// fxDR is a DestinationRule with subsets name=version label ("v1" selects
// version=v1); age orders rules (older first).
func fxDR(ns, name, host string, age int, subsets ...string) *networkingv1.DestinationRule {
	dr := &networkingv1.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		CreationTimestamp: metav1.NewTime(drEpoch.Add(time.Duration(age) * time.Hour))}}
	dr.Spec.Host = host
	for _, s := range subsets {
		dr.Spec.Subsets = append(dr.Spec.Subsets, &networkingv1alpha3.Subset{Name: s, Labels: map[string]string{"version": s}})
	}
	return dr
}

// fxVS routes host to each "subset:weight" of dest.
func fxVS(ns, name string, hosts []string, dest string, subsets ...string) *networkingv1.VirtualService {
	vs := &networkingv1.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	vs.Spec.Hosts = hosts
	route := &networkingv1alpha3.HTTPRoute{}
	for _, s := range subsets {
		route.Route = append(route.Route, &networkingv1alpha3.HTTPRouteDestination{
			Destination: &networkingv1alpha3.Destination{Host: dest, Subset: s}, Weight: int32(100 / len(subsets))})
	}
	vs.Spec.Http = []*networkingv1alpha3.HTTPRoute{route}
	return vs
}

// fxDRWorld is the orders Service with a meshed pod per "ns/dr/subset" key
// of subsetPods (labelled version=subset), and the rules.
func fxDRWorld(drs []*networkingv1.DestinationRule, vss []*networkingv1.VirtualService, subsetPods map[string][]string) modelInput {
	in := modelInput{Service: fxService(intstr.FromInt32(8080)), DestinationRules: drs, VirtualServices: vss}
	if subsetPods == nil {
		subsetPods = map[string][]string{"shop/orders/v1": {"orders-a"}}
	}
	keys := make([]string, 0, len(subsetPods))
	for k := range subsetPods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		subset := k[strings.LastIndex(k, "/")+1:]
		for _, name := range subsetPods[k] {
			p := meshedPod(name, true)
			p.Labels["version"] = subset
			p.Status.PodIP = fmt.Sprintf("10.0.1.%d", len(in.Pods)+1)
			in.Pods = append(in.Pods, p)
		}
	}
	return in
}

// webCaller is web/web-1, a meshed caller in another namespace.
func webCaller(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "web", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}, {Name: mesh.ProxyContainer}}}}
}

func withPolicy(dr *networkingv1.DestinationRule, tp *networkingv1alpha3.TrafficPolicy) *networkingv1.DestinationRule {
	dr.Spec.TrafficPolicy = tp
	return dr
}

func TestDestinationRulesEvaluate(t *testing.T) {
	orders := cluster.Target{Namespace: "shop", Service: "orders"}
	fromWeb := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	vsV1V2 := fxVS("shop", "orders", []string{"orders"}, "orders", "v1", "v2")
	cases := []struct {
		name    string
		target  cluster.Target
		in      modelInput
		status  Status
		summary string
		facts   Facts
		raw     string
	}{
		{
			name:    "no rules",
			target:  orders,
			in:      fxDRWorld(nil, nil, map[string][]string{"shop/orders/v1": {"orders-a"}}),
			status:  StatusPass,
			summary: "no DestinationRule applies",
			facts: Facts{"dr_found": false, "dr_names": []string{}, "dr_subsets_without_pods": []string{}, "vs_found": false,
				"vs_undefined_subsets": []string{}, "dr_outlier_consecutive_5xx": 0, "dr_outlier_max_ejection_percent": 0,
				"dr_outlier_aggressive": false, "dr_pool_tiny": false, "dr_pool_limits": []string{}, "dr_idle_timeout_s": 0,
				"visibility_visible": true, "visibility_hidden_by": "", "dr_subset_no_pods_percent": 0, "vs_undefined_subset_percent": 0},
		},
		{
			name:   "healthy subsets and routes",
			target: orders,
			in: fxDRWorld([]*networkingv1.DestinationRule{fxDR("shop", "orders", "orders", 0, "v1", "v2")}, []*networkingv1.VirtualService{vsV1V2},
				map[string][]string{"shop/orders/v1": {"orders-a"}, "shop/orders/v2": {"orders-b"}}),
			status:  StatusPass,
			summary: "DestinationRule shop/orders applies; VirtualService routes resolve",
			facts:   Facts{"dr_found": true, "dr_names": []string{"shop/orders"}, "vs_found": true, "vs_undefined_subsets": []string{}},
		},
		{
			name:   "route to a subset no rule defines, subset without pods",
			target: orders,
			in: fxDRWorld([]*networkingv1.DestinationRule{fxDR("shop", "orders", "orders.shop.svc.cluster.local", 0, "v1", "v3")},
				[]*networkingv1.VirtualService{vsV1V2}, map[string][]string{"shop/orders/v1": {"orders-a"}, "shop/orders/v3": nil}),
			status:  StatusFail,
			summary: "50% of shop/orders http[0]'s requests go to subset v2 is not defined",
			facts: Facts{"vs_undefined_subsets": []string{"orders/v2"}, "dr_subsets_without_pods": []string{"orders/v3"},
				"vs_undefined_subset_percent": 50, "dr_subsets_without_pods_routed": []string{}},
		},
		{
			// The client's namespace rule wins over the service's, so the
			// subsets defined next to the service do not exist for web.
			name:   "client namespace rule shadows the service's subsets",
			target: fromWeb,
			in: func() modelInput {
				in := fxDRWorld([]*networkingv1.DestinationRule{
					fxDR("shop", "orders", "orders", 0, "v1", "v2"),
					fxDR("web", "orders-tls", "orders.shop.svc.cluster.local", 5),
				}, []*networkingv1.VirtualService{vsV1V2}, map[string][]string{"shop/orders/v1": {"a"}, "shop/orders/v2": {"b"}})
				in.Source = webCaller(map[string]string{"app": "web"})
				return in
			}(),
			status:  StatusFail,
			summary: "50% of shop/orders http[0]'s requests go to subset v1 is not defined",
			facts:   Facts{"dr_names": []string{"web/orders-tls"}, "vs_undefined_subsets": []string{"orders/v1", "orders/v2"}, "vs_undefined_subset_percent": 100},
			raw:     "",
		},
		{
			name:   "same host in one namespace merges; exact beats wildcard; near-miss host flagged",
			target: orders,
			in: fxDRWorld([]*networkingv1.DestinationRule{
				fxDR("shop", "orders-b", "orders", 2, "v2"),
				fxDR("shop", "orders-a", "orders", 1, "v1"),
				fxDR("shop", "wild", "*.shop.svc.cluster.local", 0, "v9"),
				fxDR("shop", "typo", "orders.shop", 0, "v1"),
				fxDR("istio-system", "mesh", "*", 0),
			}, []*networkingv1.VirtualService{vsV1V2}, map[string][]string{"shop/orders-a/v1": {"a"}, "shop/orders-b/v2": {"b"}}),
			status:  StatusWarn,
			summary: `DestinationRule shop/orders-a, shop/orders-b applies; shop/typo never applies: Istio does not complete host "orders.shop", use orders.shop.svc.cluster.local`,
			facts:   Facts{"dr_names": []string{"shop/orders-a", "shop/orders-b"}, "vs_undefined_subsets": []string{}},
		},
		{
			name:   "exportTo hides the service namespace rule; root rule applies",
			target: fromWeb,
			in: func() modelInput {
				hidden := fxDR("shop", "orders", "orders", 0, "v1", "v2")
				hidden.Spec.ExportTo = []string{"."}
				in := fxDRWorld([]*networkingv1.DestinationRule{hidden, fxDR("istio-system", "mesh", "*.svc.cluster.local", 0)}, nil, map[string][]string{"shop/orders/v1": {"a"}})
				in.Source = webCaller(map[string]string{"app": "web"})
				return in
			}(),
			status:  StatusPass,
			summary: "DestinationRule istio-system/mesh applies",
			facts:   Facts{"dr_names": []string{"istio-system/mesh"}},
		},
		{
			name:   "a workloadSelector rule in the caller's namespace that does not select it still claims the host: no fallback to the service's rule, as istiod does",
			target: fromWeb,
			in: func() modelInput {
				sel := fxDR("web", "canary-only", "orders.shop.svc.cluster.local", 0)
				sel.Spec.WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "canary"}}
				in := fxDRWorld([]*networkingv1.DestinationRule{sel, fxDR("shop", "orders", "orders", 0)}, nil, map[string][]string{"shop/orders/v1": {"a"}})
				in.Source = webCaller(map[string]string{"app": "web"})
				return in
			}(),
			status:  StatusPass,
			summary: "no DestinationRule applies",
		},
		{
			name:   "subset label contradicting the selector selects no endpoint; unrouted, it is only said",
			target: orders,
			in: func() modelInput {
				dr := fxDR("shop", "orders", "orders", 0)
				dr.Spec.Subsets = []*networkingv1alpha3.Subset{{Name: "v1", Labels: map[string]string{"app": "orders-v1"}}}
				return fxDRWorld([]*networkingv1.DestinationRule{dr}, nil, map[string][]string{"shop/orders/v1": {"a"}})
			}(),
			status:  StatusWarn,
			summary: "DestinationRule shop/orders applies; subset v1 has no serving endpoint (no route sends to it)",
			facts:   Facts{"dr_subsets_without_pods": []string{"orders/v1"}, "dr_subsets_without_pods_routed": []string{}},
		},
		{
			name:   "aggressive outlier and tiny pool; maxRequestsPerConnection 1 is not tiny",
			target: orders,
			in: fxDRWorld([]*networkingv1.DestinationRule{withPolicy(fxDR("shop", "orders", "orders", 0), &networkingv1alpha3.TrafficPolicy{
				OutlierDetection: &networkingv1alpha3.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(1), MaxEjectionPercent: 100},
				ConnectionPool: &networkingv1alpha3.ConnectionPoolSettings{
					Tcp:  &networkingv1alpha3.ConnectionPoolSettings_TCPSettings{MaxConnections: 1},
					Http: &networkingv1alpha3.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: 1, MaxRequestsPerConnection: 1, IdleTimeout: durationpb.New(90 * time.Second)},
				},
			})}, nil, nil),
			status: StatusWarn,
			summary: "DestinationRule shop/orders applies; aggressive outlier detection (shop/orders port 80: consecutive5xxErrors 1 ejects a host on its first 5xx; " +
				"shop/orders port 80: maxEjectionPercent 100 lets every host be ejected at once); tiny connection pool (shop/orders port 80: tcp.maxConnections 1; shop/orders port 80: http1MaxPendingRequests 1)",
			facts: Facts{"dr_outlier_consecutive_5xx": 1, "dr_outlier_max_ejection_percent": 100, "dr_outlier_aggressive": true, "dr_pool_tiny": true,
				"dr_idle_timeout_s": 90, "dr_pool_limits": []string{"tcp.maxConnections=1", "http.http1MaxPendingRequests=1", "http.maxRequestsPerConnection=1", "http.idleTimeout=1m30s"}},
			raw: "maxRequestsPerConnection 1 disables keep-alive",
		},
		{
			name:   "keep-alive off alone is not a warning; deprecated consecutiveErrors read as gateway errors",
			target: orders,
			in: fxDRWorld([]*networkingv1.DestinationRule{withPolicy(fxDR("shop", "orders", "orders", 0), &networkingv1alpha3.TrafficPolicy{
				OutlierDetection: &networkingv1alpha3.OutlierDetection{ConsecutiveErrors: 7},
				ConnectionPool:   &networkingv1alpha3.ConnectionPoolSettings{Http: &networkingv1alpha3.ConnectionPoolSettings_HTTPSettings{MaxRequestsPerConnection: 1}},
			})}, nil, nil),
			status:  StatusPass,
			summary: "DestinationRule shop/orders applies",
			facts:   Facts{"dr_outlier_consecutive_5xx": 0, "dr_outlier_consecutive_gateway_errors": 7, "dr_outlier_max_ejection_percent": 0, "dr_outlier_aggressive": false, "dr_pool_tiny": false},
			raw:     "maxEjectionPercent unset (Envoy default 10%",
		},
		{
			name:   "port-level settings replace the top level for --port",
			target: cluster.Target{Namespace: "shop", Service: "orders", Port: 80},
			in: fxDRWorld([]*networkingv1.DestinationRule{withPolicy(fxDR("shop", "orders", "orders", 0), &networkingv1alpha3.TrafficPolicy{
				OutlierDetection: &networkingv1alpha3.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(5)},
				PortLevelSettings: []*networkingv1alpha3.TrafficPolicy_PortTrafficPolicy{{
					Port:             &networkingv1alpha3.PortSelector{Number: 80},
					OutlierDetection: &networkingv1alpha3.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(1)},
				}},
			})}, nil, nil),
			status:  StatusWarn,
			facts:   Facts{"dr_outlier_consecutive_5xx": 1, "dr_outlier_aggressive": true},
			summary: "DestinationRule shop/orders applies; aggressive outlier detection (shop/orders port 80: consecutive5xxErrors 1 ejects a host on its first 5xx)",
		},
		{
			name:   "subset policy adds flags",
			target: orders,
			in: func() modelInput {
				dr := fxDR("shop", "orders", "orders", 0, "v1")
				dr.Spec.Subsets[0].TrafficPolicy = &networkingv1alpha3.TrafficPolicy{ConnectionPool: &networkingv1alpha3.ConnectionPoolSettings{
					Http: &networkingv1alpha3.ConnectionPoolSettings_HTTPSettings{Http2MaxRequests: 2}}}
				return fxDRWorld([]*networkingv1.DestinationRule{dr}, nil, map[string][]string{"shop/orders/v1": {"a"}})
			}(),
			status:  StatusWarn,
			summary: "DestinationRule shop/orders applies; tiny connection pool (orders subset v1: http2MaxRequests 2)",
			facts:   Facts{"dr_pool_tiny": true, "dr_pool_limits": []string{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluateDestinationRules(tc.target, tc.in.view(t, tc.target))
			mustAllFacts(t, DestinationRulesProbe{}, r)
			if r.Status != tc.status || !strings.HasPrefix(r.Summary, tc.summary) {
				t.Errorf("got %s %q\nwant %s starting %q", r.Status, r.Summary, tc.status, tc.summary)
			}
			for k, want := range tc.facts {
				if got := r.Facts[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("fact %s = %#v, want %#v", k, got, want)
				}
			}
			if !strings.Contains(r.Evidence.Raw, tc.raw) {
				t.Errorf("raw lacks %q:\n%s", tc.raw, r.Evidence.Raw)
			}
		})
	}
}

func TestDestinationRulesProbeThroughClusterReads(t *testing.T) {
	ctx := context.Background()
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	objs := func() []runtime.Object {
		meshCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: mesh.MeshConfigMap, Namespace: "istio-system"},
			Data: map[string]string{"mesh": "rootNamespace: mesh-root\n"}}
		return []runtime.Object{
			meshCM,
			fxService(intstr.FromInt32(8080)),
			fxPod("orders-a", mesh.SidecarClassic),
			fxPod("web-1", mesh.SidecarClassic, func(p *corev1.Pod) { p.Namespace = "web"; p.Labels = map[string]string{"app": "web"} }),
			fxDR("shop", "orders", "orders", 0, "v1", "v2"),
			fxDR("mesh-root", "mesh-wide", "*", 0, "never"),
			fxVS("shop", "orders", []string{"orders"}, "orders", "v1", "v2", "v3"),
		}
	}

	t.Run("subsets judged on endpoints, root namespace from mesh config", func(t *testing.T) {
		r := Run(ctx, DestinationRulesProbe{}, newFakeCluster(t, objs()...), target)
		mustAllFacts(t, DestinationRulesProbe{}, r)
		if r.Status != StatusFail ||
			!reflect.DeepEqual(r.Facts["dr_subsets_without_pods"], []string{"orders/v2"}) ||
			!reflect.DeepEqual(r.Facts["dr_subsets_without_pods_routed"], []string{"orders/v2"}) ||
			!reflect.DeepEqual(r.Facts["vs_undefined_subsets"], []string{"orders/v3"}) {
			t.Fatalf("%s %q %#v", r.Status, r.Summary, r.Facts)
		}
		cmds := strings.Join(r.Commands, "\n")
		for _, want := range []string{"kubectl get destinationrules,virtualservices -n mesh-root -o yaml", "kubectl get pods -n shop -l app=orders,version=v2 --show-labels"} {
			if !strings.Contains(cmds, want) {
				t.Errorf("commands lack %q:\n%s", want, cmds)
			}
		}
	})
	t.Run("Istio CRDs absent", func(t *testing.T) {
		f := newFakeCluster(t, objs()...)
		f.withoutKind("destinationrules")
		r := Run(ctx, DestinationRulesProbe{}, f, target)
		if r.Status != StatusError || len(r.Facts) != 0 || !strings.Contains(r.Summary, "Istio CRDs not installed") {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
	})
	// istiod reads every namespace's rules: a VirtualService of a fourth
	// namespace, exported to the caller's by name, outranks the public one
	// of the target's namespace. The rules used to be read from the
	// caller's, the target's and the root namespace only, and it was not
	// seen.
	t.Run("a VirtualService of another namespace exported to the caller's", func(t *testing.T) {
		vs := fxVS("routing", "orders-routing", []string{"orders.shop.svc.cluster.local"}, "orders.shop.svc.cluster.local", "v7")
		vs.Spec.ExportTo = []string{"web"}
		r := Run(ctx, DestinationRulesProbe{}, newFakeCluster(t, append(objs(), vs)...), target)
		if got := r.Facts["vs_undefined_subsets"]; !reflect.DeepEqual(got, []string{"orders-routing/v7"}) || r.Facts["dr_rules_partial"] != "" {
			t.Fatalf("%s %q %#v", r.Status, r.Summary, r.Facts)
		}
	})
	// The namespaced Role refuses every list across all namespaces: the
	// rules are read in the target's and the root namespace instead, the
	// set is partial, and what the model cannot be sure of says so.
	namespacedRole := func(f *fakeCluster) {
		for _, resource := range istioconfig.RuleResources() {
			f.forbidAllNamespaces("list", resource)
		}
	}
	t.Run("all-namespaces lists refused: the rules of the namespaces read, partial", func(t *testing.T) {
		f := newFakeCluster(t, objs()...)
		namespacedRole(f)
		r := Run(ctx, DestinationRulesProbe{}, f, target)
		mustAllFacts(t, DestinationRulesProbe{}, r)
		partial, _ := r.Facts["dr_rules_partial"].(string)
		routes, _ := r.Facts["dr_routes_unknown"].(string)
		if r.Status != StatusFail || !strings.Contains(partial, "other than mesh-root, shop") || !strings.Contains(routes, "VirtualService shop/orders routes") ||
			!reflect.DeepEqual(r.Facts["vs_undefined_subsets"], []string{"orders/v3"}) {
			t.Fatalf("%s %q %#v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("root namespace forbidden too is partial, target namespace forbidden is an error", func(t *testing.T) {
		f := newFakeCluster(t, objs()...)
		namespacedRole(f)
		f.forbidIn("list", "virtualservices", "mesh-root")
		r := Run(ctx, DestinationRulesProbe{}, f, target)
		mustAllFacts(t, DestinationRulesProbe{}, r)
		if !strings.Contains(r.Summary, "forbidden: cannot list VirtualServices in mesh-root") || r.Status == StatusError {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
		if partial, _ := r.Facts["dr_rules_partial"].(string); !strings.Contains(partial, "other than shop, web") {
			t.Errorf("dr_rules_partial %q", partial)
		}
		f = newFakeCluster(t, objs()...)
		f.forbid("list", "destinationrules")
		r = Run(ctx, DestinationRulesProbe{}, f, target)
		if r.Status != StatusError || len(r.Facts) != 0 || !strings.Contains(r.Summary, "forbidden: cannot list DestinationRules in shop") {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("service absent", func(t *testing.T) {
		r := Run(ctx, DestinationRulesProbe{}, newFakeCluster(t), target)
		if r.Status != StatusError || r.Summary != "cannot get service shop/orders: not found" {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
}

// A subset declared before its pods exist is harmless until a route sends
// traffic to it: the canary at weight 0 must not be blamed for UH 503s that
// come from somewhere else.
func TestSubsetWithoutPodsCountsOnlyWhenRouted(t *testing.T) {
	orders := cluster.Target{Namespace: "shop", Service: "orders"}
	pods := map[string][]string{"shop/orders/v1": {"orders-a"}, "shop/orders/v2": nil}
	canary := fxVS("shop", "orders", []string{"orders"}, "orders", "v1", "v2")
	canary.Spec.Http[0].Route[0].Weight, canary.Spec.Http[0].Route[1].Weight = 100, 0
	mirrored := fxVS("shop", "orders", []string{"orders"}, "orders", "v1")
	mirrored.Spec.Http[0].Mirror = &networkingv1alpha3.Destination{Host: "orders", Subset: "v2"}
	lone := fxVS("shop", "orders", []string{"orders"}, "orders", "v2")
	lone.Spec.Http[0].Route[0].Weight = 0
	for _, tc := range []struct {
		name   string
		vs     *networkingv1.VirtualService
		routed []string
	}{
		{"canary at weight 0", canary, []string{}},
		{"mirror only", mirrored, []string{}},
		{"split 50/50", fxVS("shop", "orders", []string{"orders"}, "orders", "v1", "v2"), []string{"orders/v2"}},
		{"lone destination, weight unset", lone, []string{"orders/v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fxDRWorld([]*networkingv1.DestinationRule{fxDR("shop", "orders", "orders", 0, "v1", "v2")}, []*networkingv1.VirtualService{tc.vs}, pods)
			r := evaluateDestinationRules(orders, in.view(t, orders))
			if err := CheckFacts(DestinationRulesProbe{}.Meta(), r); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Facts["dr_subsets_without_pods"], []string{"orders/v2"}) ||
				!reflect.DeepEqual(r.Facts["dr_subsets_without_pods_routed"], tc.routed) {
				t.Errorf("without pods %v, routed %v, want routed %v", r.Facts["dr_subsets_without_pods"], r.Facts["dr_subsets_without_pods_routed"], tc.routed)
			}
		})
	}
}

// A Gateway API mesh route (GAMMA) is the caller's route for the target:
// its backendRef to a Service that does not exist is a share of its
// requests the caller's proxy answers 500 NC, not a missing ServiceEntry.
func TestDestinationRulesMeshRouteBackends(t *testing.T) {
	tg := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	for file, want := range map[string]Facts{
		"gamma-route-backend-not-found.yaml": {"mesh_route_broken_percent": 10, "vs_routed_missing_hosts": []string{},
			"mesh_route_backend_not_found": []string{"HTTPRoute shop/orders-canary shop.orders-canary.0: orders-canary.shop.svc.cluster.local:8080"}},
		"gamma-route-other-namespace.yaml": {"mesh_route_broken_percent": 0, "mesh_route_backend_not_found": []string{}},
	} {
		objs := meshtest.Objects(t, "mesh/testdata/model", "base.yaml", file)
		cfg := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
		caller := meshtest.CallerFrom(t, objs, cfg, "web/web-1")
		v, err := cfg.ViewFor(caller, tg.Host(), tg.Port)
		if err != nil {
			t.Fatal(err)
		}
		r := evaluateDestinationRules(tg, callerview.View{Config: cfg, Caller: caller, CallerNamed: true, Views: []*mesh.View{v}})
		if err := CheckFacts(DestinationRulesProbe{}.Meta(), r); err != nil {
			t.Fatal(err)
		}
		for k, w := range want {
			if !reflect.DeepEqual(r.Facts[k], w) {
				t.Errorf("%s: %s = %#v, want %#v", file, k, r.Facts[k], w)
			}
		}
	}
}
