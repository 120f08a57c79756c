package probes

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func annotate(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func inWeb(p *corev1.Pod) { p.Namespace = "web"; p.Labels = map[string]string{"app": "web"} }

// istioInit gives the pod the injector's istio-init container with the
// istio-iptables arguments of Istio 1.24 plus extra flags.
func istioInit(extra ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		args := []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT",
			"-i", "*", "-x", "", "-b", "*", "-d", "15090,15021,15020"}
		for i := 0; i+1 < len(extra); i += 2 {
			if j := slices.Index(args, extra[i]); j >= 0 {
				args[j+1] = extra[i+1]
			} else {
				args = append(args, extra[i], extra[i+1])
			}
		}
		args = append(args, "--log_output_level=default:info")
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "istio-init", Args: args})
	}
}

func TestPortExclusionEvaluate(t *testing.T) {
	orders := cluster.Target{Namespace: "shop", Service: "orders"}
	from := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	svc := fxService(intstr.FromString("http")) // 80 -> http (8080 on fxPod)
	exOut, exIn := annotation.SidecarTrafficExcludeOutboundPorts.Name, annotation.SidecarTrafficExcludeInboundPorts.Name
	cases := []struct {
		name    string
		target  cluster.Target
		in      portExclusionInput
		status  Status
		summary string
		facts   Facts
		raw     string
	}{
		{
			name:    "nothing excluded",
			target:  from,
			in:      portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic)}, Source: fxPod("web-1", mesh.SidecarClassic, inWeb)},
			status:  StatusPass,
			summary: "no interception exclusions on the source or target pods",
			facts:   Facts{"exclusion_outbound_ports": []string{}, "exclusion_inbound_ports": []string{}, "exclusion_target_port_bypassed": false},
		},
		{
			name:   "inbound exclusion of the resolved named targetPort",
			target: orders,
			in: portExclusionInput{Service: svc, Pods: []corev1.Pod{
				*fxPod("orders-a", mesh.SidecarClassic, annotate(exIn, "8080, 9090")),
				*fxPod("orders-b", mesh.SidecarClassic),
			}},
			status:  StatusWarn,
			summary: "traffic to the target bypasses the sidecar: orders-a excludes inbound port 8080",
			facts:   Facts{"exclusion_inbound_ports": []string{"8080", "9090"}, "exclusion_target_port_bypassed": true},
			raw:     "skips mTLS, AuthorizationPolicy",
		},
		{
			name:   "source excludes the service port; target's own outbound exclusion is not reported with a source",
			target: from,
			in: portExclusionInput{Service: svc,
				Pods:   []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic, annotate(exOut, "5432"))},
				Source: fxPod("web-1", mesh.SidecarClassic, inWeb, annotate(exOut, "80,443"))},
			status:  StatusWarn,
			summary: "traffic to the target bypasses the sidecar: web-1 excludes outbound port 80",
			facts:   Facts{"exclusion_outbound_ports": []string{"443", "80"}, "exclusion_target_port_bypassed": true},
		},
		{
			name:   "excluding the targetPort on the client does nothing for a ClusterIP service",
			target: from,
			in: portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic)},
				Source: fxPod("web-1", mesh.SidecarClassic, inWeb, annotate(exOut, "8080"))},
			status:  StatusPass,
			summary: "interception exclusions present, none covers the target's port",
			facts:   Facts{"exclusion_target_port_bypassed": false},
		},
		{
			name:   "source excludes the ClusterIP range; includeInboundPorts leaves the port out",
			target: from,
			in: portExclusionInput{Service: svc,
				Pods:   []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic, annotate(annotation.SidecarTrafficIncludeInboundPorts.Name, "9090"))},
				Source: fxPod("web-1", mesh.SidecarClassic, inWeb, annotate(annotation.SidecarTrafficExcludeOutboundIPRanges.Name, "10.96.0.0/12"))},
			status: StatusWarn,
			summary: "traffic to the target bypasses the sidecar: web-1 excludes outbound range covering 10.96.0.20; " +
				"orders-a captures only inbound ports 9090, not 8080",
			facts: Facts{"exclusion_target_port_bypassed": true, "exclusion_inbound_ports": []string{}},
		},
		{
			name:   "includeOutboundIPRanges not covering the service; includeOutboundPorts forces it back",
			target: from,
			in: portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic)},
				Source: fxPod("web-1", mesh.SidecarClassic, inWeb, annotate(annotation.SidecarTrafficIncludeOutboundIPRanges.Name, "10.0.0.0/16",
					annotation.SidecarTrafficIncludeOutboundPorts.Name, "80"))},
			status:  StatusPass,
			summary: "interception exclusions present, none covers the target's port",
			facts:   Facts{"exclusion_target_port_bypassed": false},
		},
		{
			name:   "annotations on a pod without sidecar change nothing",
			target: orders,
			in:     portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarNone, annotate(exIn, "8080"))}},
			status: StatusPass, summary: "interception exclusions present, none covers the target's port",
			facts: Facts{"exclusion_target_port_bypassed": false, "exclusion_inbound_ports": []string{"8080"}},
			raw:   "orders-a has no sidecar: its annotations have no effect",
		},
		{
			// Istio's own inbound exclusions (15020, 15021, 15090) are on
			// every injected pod and are not reported.
			name:    "the injector's default istio-init arguments exclude nothing of the app's",
			target:  from,
			in:      portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic, istioInit())}, Source: fxPod("web-1", mesh.SidecarClassic, inWeb, istioInit())},
			status:  StatusPass,
			summary: "no interception exclusions on the source or target pods",
			facts:   Facts{"exclusion_outbound_ports": []string{}, "exclusion_inbound_ports": []string{}, "exclusion_target_port_bypassed": false},
		},
		{
			// A mesh-wide excludeOutboundPorts from the injector's values
			// reaches istio-init's -o with no annotation on the pod.
			name:   "mesh-wide outbound exclusion in istio-init's arguments, no annotation",
			target: from,
			in: portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic, istioInit())},
				Source: fxPod("web-1", mesh.SidecarClassic, inWeb, istioInit("-o", "80,5432"))},
			status:  StatusWarn,
			summary: "traffic to the target bypasses the sidecar: web-1 excludes outbound port 80",
			facts:   Facts{"exclusion_outbound_ports": []string{"5432", "80"}, "exclusion_target_port_bypassed": true},
		},
		{
			// The pod's iptables were written at start: an annotation added
			// afterwards (or removed) changes nothing until the pod restarts.
			name:   "istio-init's arguments win over a later annotation",
			target: orders,
			in: portExclusionInput{Service: svc, Pods: []corev1.Pod{
				*fxPod("orders-a", mesh.SidecarClassic, istioInit("-d", "15090,15021,15020,8080"), annotate(exIn, "9999")),
			}},
			status:  StatusWarn,
			summary: "traffic to the target bypasses the sidecar: orders-a excludes inbound port 8080",
			facts:   Facts{"exclusion_inbound_ports": []string{"8080"}, "exclusion_target_port_bypassed": true},
		},
		{
			name:   "--port other than the excluded one",
			target: cluster.Target{Namespace: "shop", Service: "orders", Port: 9000},
			in: portExclusionInput{Service: func() *corev1.Service {
				s := fxService(intstr.FromString("http"))
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 9000, TargetPort: intstr.FromInt32(9000)})
				return s
			}(), Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic, annotate(exIn, "8080"))}},
			status: StatusPass, summary: "interception exclusions present, none covers the target's port",
			facts: Facts{"exclusion_target_port_bypassed": false},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluatePortExclusion(tc.target, tc.in)
			mustAllFacts(t, PortExclusionProbe{}, r)
			if r.Status != tc.status || r.Summary != tc.summary {
				t.Errorf("got %s %q\nwant %s %q", r.Status, r.Summary, tc.status, tc.summary)
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

func TestPortExclusionProbeThroughClusterReads(t *testing.T) {
	ctx := context.Background()
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	f := newFakeCluster(t, fxService(intstr.FromInt32(8080)),
		fxPod("orders-a", mesh.SidecarNative, annotate(annotation.SidecarTrafficExcludeInboundPorts.Name, "8080")),
		fxPod("web-1", mesh.SidecarClassic, inWeb))
	r := Run(ctx, PortExclusionProbe{}, f, target)
	mustAllFacts(t, PortExclusionProbe{}, r)
	if r.Status != StatusWarn || r.Facts["exclusion_target_port_bypassed"] != true {
		t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
	}
	if !strings.Contains(strings.Join(r.Commands, "\n"), "kubectl get pods -n shop -l app=orders") {
		t.Errorf("commands %q", r.Commands)
	}

	f.forbid("list", "pods")
	r = Run(ctx, PortExclusionProbe{}, f, target)
	if r.Status != StatusError || len(r.Facts) != 0 || !strings.Contains(r.Summary, "forbidden: cannot list pods in shop") {
		t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
	}
	r = Run(ctx, PortExclusionProbe{}, newFakeCluster(t), target)
	if r.Status != StatusError || r.Summary != "cannot get service shop/orders: not found" {
		t.Fatalf("%s %q", r.Status, r.Summary)
	}
}

func TestExclusionEvidenceNamesWhereTheSettingWasRead(t *testing.T) {
	svc := fxService(intstr.FromString("http"))
	from := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	r := evaluatePortExclusion(from, portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic)},
		Source: fxPod("web-1", mesh.SidecarClassic, inWeb, istioInit("-o", "80"))})
	if len(r.Evidence.Rows) != 1 || r.Evidence.Rows[0][2] != "istio-init -o (excludeOutboundPorts)" || r.Evidence.Rows[0][3] != "80" {
		t.Errorf("rows = %q", r.Evidence.Rows)
	}
	r = evaluatePortExclusion(from, portExclusionInput{Service: svc, Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic)},
		Source: fxPod("web-1", mesh.SidecarClassic, inWeb, annotate(annotation.SidecarTrafficExcludeOutboundPorts.Name, "80"))})
	if len(r.Evidence.Rows) != 1 || r.Evidence.Rows[0][2] != annotation.SidecarTrafficExcludeOutboundPorts.Name {
		t.Errorf("rows = %q", r.Evidence.Rows)
	}
}
