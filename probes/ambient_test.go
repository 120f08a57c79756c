package probes

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
)

// ambientFake adds the Gateway API reads to the probes' fake cluster.
type ambientFake struct {
	*fakeCluster
	gateways []*gatewayv1.Gateway
}

func (a *ambientFake) GatewayAPIGateways(ctx context.Context, ns string) ([]*gatewayv1.Gateway, error) {
	var out []*gatewayv1.Gateway
	for _, g := range a.gateways {
		if g.Namespace == ns {
			out = append(out, g.DeepCopy())
		}
	}
	return out, nil
}

// The shop in ambient: web calls orders; orders-1 on worker-b, orders-2 on
// worker-c, web on worker-a; a ztunnel on each node.
var ambientWorld = testdataText("testdata/ambient/world.yaml")

func decodeObjects(t *testing.T, docs ...string) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for i, d := range docs {
		objs, err := manifests.Decode("doc"+string(rune('0'+i)), []byte(d), true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs...)
	}
	return out
}

func newAmbientFake(t *testing.T, docs ...string) *ambientFake {
	t.Helper()
	return ambientPolicyWorld(t, nil, docs...)
}

var webToOrders = cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}}

func runChecked(t *testing.T, p Probe, c cluster.Cluster, target cluster.Target) Result {
	t.Helper()
	r := Run(context.Background(), p, cluster.NewCache(c), target)
	if err := CheckFacts(p.Meta(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// EKS security groups for pods in strict mode (the VPC CNI's default when
// POD_SECURITY_GROUP_ENFORCING_MODE is unset) drop ambient's link-local
// probe SNAT: the ambient pod with a branch ENI that is not Ready is
// named; its Ready twin, the pod without a branch ENI, and the same pods
// under standard mode are not.
func TestEKSSecurityGroupsStrict(t *testing.T) {
	pod := func(name string, eni, ready bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Labels:      map[string]string{"istio.io/dataplane-mode": "ambient"},
			Annotations: map[string]string{"ambient.istio.io/redirection": "enabled"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "orders", Image: "orders"}}}}
		if eni {
			p.Annotations["vpc.amazonaws.com/pod-eni"] = `[{"eniId":"eni-0b3f2a1c9d8e7f654","ifAddress":"02:4f:1a:2b:3c:4d","privateIp":"192.168.101.37","vlanId":1,"subnetCidr":"192.168.96.0/19"}]`
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	pods := []corev1.Pod{pod("orders-1", true, false), pod("orders-2", true, true), pod("orders-3", false, false)}
	awsNode := func(env ...corev1.EnvVar) []corev1.Pod {
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-node-7xk2p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "aws-node", Image: "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1",
				Env: append([]corev1.EnvVar{{Name: "ENABLE_POD_ENI", Value: "true"}}, env...)}}}}}
	}
	r := Result{Facts: Facts{}}
	judgeEKSSecurityGroups(&r, pods, nil, awsNode(), nil)
	if got := r.Facts["eks_sg_strict_unready"]; !reflect.DeepEqual(got, []string{"shop/orders-1"}) || !strings.Contains(r.Evidence.Raw, "unset: the VPC CNI's default") {
		t.Errorf("strict by default: %v\n%s", got, r.Evidence.Raw)
	}
	r = Result{Facts: Facts{}}
	judgeEKSSecurityGroups(&r, pods, nil, awsNode(corev1.EnvVar{Name: "POD_SECURITY_GROUP_ENFORCING_MODE", Value: "standard"}), nil)
	if got := r.Facts["eks_sg_strict_unready"]; !reflect.DeepEqual(got, []string{}) {
		t.Errorf("standard: %v", got)
	}
	r = Result{Facts: Facts{}}
	judgeEKSSecurityGroups(&r, pods, nil, nil, errors.New("forbidden"))
	if _, ok := r.Facts["eks_sg_strict_unready"]; ok {
		t.Errorf("not read is not none: %v", r.Facts)
	}
}

func TestDataPlaneProbe(t *testing.T) {
	waypoint := `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: orders-waypoint, namespace: shop}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}
`
	labelled := `
apiVersion: v1
kind: Service
metadata: {name: orders, namespace: shop, labels: {istio.io/use-waypoint: orders-waypoint}}
spec:
  selector: {app: orders}
  ports: [{name: http, port: 8080, targetPort: 8080}]
status:
  conditions: [{type: istio.io/WaypointBound, status: "False", reason: WaypointIsNotReady, message: "waypoint is not ready", lastTransitionTime: "2026-12-02T05:00:00Z"}]
`
	t.Run("ambient caller and pods, no waypoint", func(t *testing.T) {
		r := runChecked(t, DataPlaneProbe{}, newAmbientFake(t), webToOrders)
		want := Facts{"dataplane_ambient": true, "dataplane_source": "ambient", "dataplane_source_not_enrolled": false, "dataplane_target": "ambient",
			"dataplane_target_ambient": 2, "dataplane_target_not_enrolled": 0, "dataplane_not_enrolled_pods": []string{}, "waypoint_named": false,
			"waypoint_name": "", "waypoint_state": "none", "waypoint_bound_condition": "", "waypoint_traversed": false, "waypoint_ready_pods": 0,
			"cilium_socket_lb": "not-cilium", "eks_sg_strict_unready": []string{}}
		if !reflect.DeepEqual(r.Facts, want) || r.Status != StatusPass {
			t.Errorf("%s %s\nfacts %v\nwant  %v", r.Status, r.Summary, r.Facts, want)
		}
	})
	// Cilium's Helm chart with kubeProxyReplacement and socketLB left at
	// its default: socket LB in the pods' namespaces, which ambient's
	// prerequisites forbid; with hostNamespaceOnly it is in the hosts'.
	t.Run("cilium socket LB in the pods' namespaces", func(t *testing.T) {
		cm := func(hostnsOnly string) string {
			return `
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {kube-proxy-replacement: "true", cni-exclusive: "false", enable-bpf-masquerade: "false"` + hostnsOnly + `}
`
		}
		r := runChecked(t, DataPlaneProbe{}, newAmbientFake(t, cm("")), webToOrders)
		if r.Facts["cilium_socket_lb"] != "pod-namespaces" || r.Status != StatusWarn || !strings.Contains(r.Evidence.Raw, `kube-proxy-replacement="true"`) {
			t.Errorf("%s %s: %v\n%s", r.Status, r.Summary, r.Facts["cilium_socket_lb"], r.Evidence.Raw)
		}
		// Not read is not "not Cilium".
		unread := Result{Facts: Facts{}}
		judgeCiliumSocketLB(&unread, nil, errors.New(`configmaps "cilium-config" is forbidden: User "oncall" cannot get resource "configmaps" in API group "" in the namespace "kube-system"`))
		if _, ok := unread.Facts["cilium_socket_lb"]; ok || !strings.Contains(unread.Evidence.Raw, "unknown") {
			t.Errorf("unread: %v %q", unread.Facts, unread.Evidence.Raw)
		}
		r = runChecked(t, DataPlaneProbe{}, newAmbientFake(t, cm(`, bpf-lb-sock-hostns-only: "true"`)), webToOrders)
		if r.Facts["cilium_socket_lb"] != "host-namespace-only" || r.Status != StatusPass {
			t.Errorf("hostns-only: %s %v", r.Status, r.Facts["cilium_socket_lb"])
		}
	})
	t.Run("the waypoint exists but no pod of it is ready", func(t *testing.T) {
		// The Service's label replaces the world's Service: decode order.
		c := newAmbientFake(t, waypoint)
		svc, _ := c.GetService(context.Background(), "shop", "orders")
		svc.Labels = map[string]string{"istio.io/use-waypoint": "orders-waypoint"}
		var st corev1.Service
		if err := yaml.Unmarshal([]byte(labelled), &st); err != nil {
			t.Fatal(err)
		}
		svc.Status = st.Status
		if _, err := c.kube.CoreV1().Services("shop").Update(context.Background(), svc, metav1Update); err != nil {
			t.Fatal(err)
		}
		r := runChecked(t, DataPlaneProbe{}, c, webToOrders)
		if r.Facts["waypoint_state"] != "not-ready" || r.Facts["waypoint_name"] != "shop/orders-waypoint" || r.Facts["waypoint_ready_pods"] != 0 ||
			r.Facts["waypoint_bound_condition"] != "False: WaypointIsNotReady" || r.Facts["waypoint_traversed"] != false || r.Status != StatusFail {
			t.Errorf("%s %s\n%v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("a caller the CNI has not enrolled", func(t *testing.T) {
		c := newAmbientFake(t)
		web, _ := c.GetPod(context.Background(), "shop", "web-1")
		web.Annotations = nil
		if _, err := c.kube.CoreV1().Pods("shop").Update(context.Background(), web, metav1Update); err != nil {
			t.Fatal(err)
		}
		r := runChecked(t, DataPlaneProbe{}, c, webToOrders)
		if r.Facts["dataplane_source"] != "none" || r.Facts["dataplane_source_not_enrolled"] != true || r.Status != StatusFail ||
			!strings.Contains(strings.Join(r.Facts["dataplane_not_enrolled_pods"].([]string), " "), "web-1 (caller)") {
			t.Errorf("%s %s\n%v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("sidecars only: nothing ambient", func(t *testing.T) {
		c := newFakeCluster(t, decodeObjects(t, strings.ReplaceAll(strings.ReplaceAll(ambientWorld, "istio.io/dataplane-mode: ambient, ", ""),
			"annotations: {ambient.istio.io/redirection: enabled}", "annotations: {}"))...)
		r := runChecked(t, DataPlaneProbe{}, c, webToOrders)
		if r.Facts["dataplane_ambient"] != false || r.Facts["dataplane_source"] != "none" || r.Facts["dataplane_target"] != "none" {
			t.Errorf("%v", r.Facts)
		}
		for _, p := range []Probe{AmbientPolicyProbe{}, ZtunnelProbe{}} {
			if r := runChecked(t, p, c, webToOrders); r.Status != StatusSkipped || len(r.Facts) != 0 {
				t.Errorf("%s without ambient: %s %s %v", p.Meta().ID, r.Status, r.Summary, r.Facts)
			}
		}
		// No waypoint named: none refused anything.
		if r := runChecked(t, WaypointProbe{}, c, webToOrders); r.Status != StatusPass || !reflect.DeepEqual(r.Facts, Facts{"waypoint_pods_read": 0, "waypoint_rbac_denied": 0}) {
			t.Errorf("waypoint without a waypoint: %s %s %v", r.Status, r.Summary, r.Facts)
		}
	})
}

func TestAmbientPolicyProbe(t *testing.T) {
	netpol := `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: orders-from-web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: 8080}]}]
`
	allowCheckout := `
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: orders-from-checkout, namespace: shop}
spec:
  selector: {matchLabels: {app: orders}}
  rules: [{from: [{source: {principals: [cluster.local/ns/shop/sa/checkout]}}]}]
`
	t.Run("the app's port is admitted, HBONE is not", func(t *testing.T) {
		r := runChecked(t, AmbientPolicyProbe{}, newAmbientFake(t, netpol), webToOrders)
		want := Facts{"hbone_netpol_blocked": true, "hbone_netpol_policies": []string{"shop/orders-from-web"},
			"hbone_blocked_hops": []string{"shop/web-1 -> shop/orders-1 TCP 15008", "shop/web-1 -> shop/orders-2 TCP 15008"},
			"authz_denied":       false, "authz_denied_by": "", "authz_reason": "", "authz_policies": []string{}, "authz_waypoint_policies": []string{},
			"authz_waypoint_admitted": false}
		if !reflect.DeepEqual(r.Facts, want) || r.Status != StatusFail {
			t.Errorf("%s %s\nfacts %v\nwant  %v", r.Status, r.Summary, r.Facts, want)
		}
	})
	t.Run("ztunnel's policy admits another caller", func(t *testing.T) {
		r := runChecked(t, AmbientPolicyProbe{}, newAmbientFake(t, allowCheckout), webToOrders)
		if r.Facts["authz_denied"] != true || r.Facts["authz_reason"] != "allow policies exist, but none allowed" || r.Facts["hbone_netpol_blocked"] != false ||
			!reflect.DeepEqual(r.Facts["authz_policies"], []string{"ALLOW shop/orders-from-checkout"}) {
			t.Errorf("%s %s\n%v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("no caller named", func(t *testing.T) {
		target := webToOrders
		target.Source = nil
		if r := runChecked(t, AmbientPolicyProbe{}, newAmbientFake(t, netpol), target); r.Status != StatusSkipped || len(r.Facts) != 0 {
			t.Errorf("%s %s %v", r.Status, r.Summary, r.Facts)
		}
	})
}

func TestZtunnelProbe(t *testing.T) {
	logs, err := os.ReadFile("parse/ztunnel/testdata/access.log")
	if err != nil {
		t.Fatal(err)
	}
	dump, err := os.ReadFile("parse/ztunnel/testdata/dump_list.json")
	if err != nil {
		t.Fatal(err)
	}
	c := newAmbientFake(t)
	c.logs = map[string][]byte{logKey(cluster.PodRef{Namespace: "istio-system", Name: "ztunnel-a"}, "istio-proxy"): logs}
	c.envoy = map[string][]byte{envoyKey(cluster.PodRef{Namespace: "istio-system", Name: "ztunnel-a"}, "/config_dump"): dump}
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	// worker-c has an enrolled pod of the Service and no ztunnel; ztunnel-b
	// has no log: read problems, not failures.
	if r.Facts["ztunnel_pods"] != 2 || !reflect.DeepEqual(r.Facts["ztunnel_nodes_without"], []string{"worker-c"}) {
		t.Errorf("pods %v, nodes without %v", r.Facts["ztunnel_pods"], r.Facts["ztunnel_nodes_without"])
	}
	// Every access entry of the test log is about orders (its hostname or
	// one of its pods' addresses).
	want := map[string]any{"ztunnel_entries": 10, "ztunnel_completed": 2, "ztunnel_hbone_timeouts": 2, "ztunnel_rejections": 3,
		"ztunnel_strict_rejections": 1, "ztunnel_unauthorized": 1, "ztunnel_refused": 1, "ztunnel_config_read": true,
		"ztunnel_service_waypoint": "shop/orders-waypoint.shop.svc.cluster.local", "ztunnel_target_plaintext": 1}
	for k, v := range want {
		if r.Facts[k] != v {
			t.Errorf("%s = %v, want %v", k, r.Facts[k], v)
		}
	}
	if by := r.Facts["ztunnel_denied_by"]; !reflect.DeepEqual(by, []string{"istio-system/istio_converted_static_strict=1", "shop/deny-jobs=1"}) {
		t.Errorf("denied by %v", by)
	}
	if r.Status != StatusFail || !strings.Contains(r.Evidence.Raw, "maybe a NetworkPolicy is blocking HBONE port 15008") {
		t.Errorf("%s %s\n%s", r.Status, r.Summary, r.Evidence.Raw)
	}
}

func TestWaypointProbe(t *testing.T) {
	world := `
apiVersion: v1
kind: Service
metadata: {name: orders, namespace: shop, labels: {istio.io/use-waypoint: orders-waypoint}}
spec:
  selector: {app: orders}
  ports: [{name: http, port: 8080, targetPort: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: orders-waypoint, namespace: shop}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}
status: {addresses: [{type: Hostname, value: orders-waypoint.shop.svc.cluster.local}]}
---
apiVersion: v1
kind: Pod
metadata: {name: orders-waypoint-5c8d-x7k2p, namespace: shop, labels: {gateway.networking.k8s.io/gateway-name: orders-waypoint, gateway.istio.io/managed: istio.io-mesh-controller}}
spec: {nodeName: worker-b, serviceAccountName: orders-waypoint, containers: [{name: istio-proxy}]}
status: {phase: Running, podIP: 10.244.1.30, conditions: [{type: Ready, status: "True"}]}
`
	objs := decodeObjects(t, ambientWorld, world)
	// The second Service orders replaces the first.
	var kept []runtime.Object
	var gws []*gatewayv1.Gateway
	seenSvc := false
	for i := len(objs) - 1; i >= 0; i-- {
		switch o := objs[i].(type) {
		case *corev1.Service:
			if seenSvc {
				continue
			}
			seenSvc = true
		case *gatewayv1.Gateway:
			gws = append(gws, o)
			continue
		}
		kept = append(kept, objs[i])
	}
	c := &ambientFake{fakeCluster: newFakeCluster(t, kept...), gateways: gws}
	wp := cluster.PodRef{Namespace: "shop", Name: "orders-waypoint-5c8d-x7k2p"}
	c.envoy = map[string][]byte{envoyKey(wp, "/clusters?format=json"): []byte(`{"cluster_statuses":[
 {"name":"inbound-vip|8080|http|orders.shop.svc.cluster.local;","added_via_api":true,"host_statuses":[
  {"address":{"envoy_internal_address":{"server_listener_name":"connect_originate","endpoint_id":"10.244.1.7:8080"}},"health_status":{"eds_health_status":"HEALTHY"}},
  {"address":{"envoy_internal_address":{"server_listener_name":"connect_originate","endpoint_id":"10.244.2.9:8080"}},"health_status":{"eds_health_status":"HEALTHY","failed_outlier_check":true}}]},
 {"name":"main_internal","host_statuses":[]}]}`)}
	c.logs = map[string][]byte{logKey(wp, "istio-proxy"): []byte(strings.Join([]string{
		`[2026-12-02T05:11:20.118Z] "GET /api/orders/1 HTTP/1.1" 200 - via_upstream - "-" 0 412 4 3 "-" "web/1.8.3" "a1" "orders.shop.svc.cluster.local:8080" "envoy://connect_originate/10.244.1.7:8080" inbound-vip|8080|http|orders.shop.svc.cluster.local envoy://internal_client_address/ 10.96.14.20:8080 10.244.0.21:51702 - default`,
		`[2026-12-02T05:11:21.118Z] "GET /api/orders/2 HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "web/1.8.3" "a2" "orders.shop.svc.cluster.local:8080" "-" inbound-vip|8080|http|orders.shop.svc.cluster.local - 10.96.14.20:8080 10.244.0.21:51710 - default`,
		`[2026-12-02T05:11:22.118Z] "POST /api/orders HTTP/1.1" 403 - rbac_access_denied_matched_policy[ns[shop]-policy[orders-readonly]-rule[0]] - "-" 212 19 0 - "-" "web/1.8.3" "a3" "orders.shop.svc.cluster.local:8080" "-" - - 10.96.14.20:8080 10.244.0.21:51720 - -`,
		`[2026-12-02T05:11:23.118Z] "GET /api/other HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "web/1.8.3" "a4" "catalog.shop.svc.cluster.local:8080" "-" inbound-vip|8080|http|catalog.shop.svc.cluster.local - 10.96.18.3:8080 10.244.0.21:51730 - default`,
	}, "\n") + "\n")}
	r := runChecked(t, WaypointProbe{}, c, webToOrders)
	want := Facts{"waypoint_pods_read": 1, "waypoint_cluster_present": true, "waypoint_hosts_total": 2, "waypoint_hosts_healthy": 1,
		"waypoint_log_entries": 3, "waypoint_log_503": 1, "waypoint_log_flags": []string{"UH=1"}, "waypoint_rbac_denied": 1,
		"waypoint_rbac_policies": []string{"shop/orders-readonly"}, "waypoint_unexplained": []string{},
		"waypoint_log_nc500": 0, "waypoint_log_nc500_routes": []string{},
		// The fake serves no Gateway API route: the routes the waypoint
		// applies are not known, so nothing is concluded from their absence.
		"waypoint_api_routes": []string{}, "waypoint_api_backend_not_found": []string{}, "waypoint_api_backend_port_missing": []string{},
		"waypoint_api_backend_source": "", "waypoint_api_broken_share": 0,
		"waypoint_api_partial": "the HTTPRoutes of namespace shop were not read; the GRPCRoutes of namespace shop were not read"}
	if !reflect.DeepEqual(r.Facts, want) || r.Status != StatusFail {
		t.Errorf("%s %s\nfacts %v\nwant  %v", r.Status, r.Summary, r.Facts, want)
	}
	if len(r.Evidence.Rows) != 1 || r.Evidence.Rows[0][4] != "10.244.1.7:8080 10.244.2.9:8080" {
		t.Errorf("evidence %v", r.Evidence.Rows)
	}
}

var metav1Update = metav1.UpdateOptions{}

// testdataText is a file of testdata, read when the tests start.
func testdataText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}
