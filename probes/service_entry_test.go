package probes

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func fxSE(ns, name string, hosts []string, ports []uint32, exportTo ...string) *networkingv1.ServiceEntry {
	se := &networkingv1.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	se.Spec.Hosts = hosts
	se.Spec.ExportTo = exportTo
	for _, p := range ports {
		se.Spec.Ports = append(se.Spec.Ports, &networkingv1alpha3.ServicePort{Number: p, Name: "p", Protocol: "TLS"})
	}
	return se
}

func readTestdata(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func registryOnlyMesh(t *testing.T) mesh.MeshConfig {
	t.Helper()
	mc, err := mesh.ParseMeshConfig(string(readTestdata(t, "testdata/service-entry/mesh.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	return mesh.MeshConfig{Raw: mc, Found: true}
}

// A mesh config that does not name outboundTrafficPolicy runs ALLOW_ANY:
// istiod applies it over its defaults, even though the proto's zero mode is
// REGISTRY_ONLY.
func TestMeshConfigOutboundModeDefault(t *testing.T) {
	for text, want := range map[string]bool{
		"rootNamespace: mesh-root\n":  false,
		"":                            false,
		"outboundTrafficPolicy: {}\n": false,
		"outboundTrafficPolicy:\n  mode: REGISTRY_ONLY\n": true,
		"outboundTrafficPolicy:\n  mode: ALLOW_ANY\n":     false,
	} {
		mc, err := mesh.ParseMeshConfig(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := (mesh.MeshConfig{Raw: mc, Found: true}).RegistryOnly(); got != want {
			t.Errorf("%q: RegistryOnly = %v, want %v", text, got, want)
		}
	}
}

func TestServiceEntryEvaluate(t *testing.T) {
	from := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	hosts, entries := proxylog.ParseBlackholed(readTestdata(t, "testdata/service-entry/proxy.log"), nil)
	mesh := registryOnlyMesh(t)
	cases := []struct {
		name    string
		target  cluster.Target
		in      seInput
		status  Status
		summary string
		facts   Facts
		rows    map[string]string // host -> verdict
	}{
		{
			name:    "no source: skipped, mode still reported",
			target:  cluster.Target{Namespace: "shop", Service: "orders"},
			in:      seInput{Mesh: mesh},
			status:  StatusSkipped,
			summary: "outbound policy REGISTRY_ONLY; name the calling pod with --from to check external hosts",
			facts:   Facts{"se_registry_only": true, "se_unregistered_hosts": []string{}, "se_hidden_hosts": []string{}, "se_in_cluster_hosts": []string{}},
		},
		{
			name:   "unregistered, hidden, wildcard, IP range and undeclared port",
			target: from,
			in: seInput{Mesh: mesh, Hosts: hosts, Entries: entries, SEs: []*networkingv1.ServiceEntry{
				fxSE("shop", "stripe", []string{"api.stripe.com"}, []uint32{443}, "."),
				fxSE("web", "example", []string{"*.example.com"}, []uint32{443}),
				func() *networkingv1.ServiceEntry {
					se := fxSE("istio-system", "db", []string{"db.internal"}, []uint32{5432})
					se.Spec.Addresses = []string{"203.0.113.0/24"}
					return se
				}(),
			}},
			status:  StatusFail,
			summary: "REGISTRY_ONLY: 4 external hosts sent to BlackHoleCluster; no ServiceEntry for github.com; ServiceEntry not exported to web for api.stripe.com",
			facts:   Facts{"se_unregistered_hosts": []string{"github.com"}, "se_hidden_hosts": []string{"api.stripe.com"}},
			rows: map[string]string{
				"api.stripe.com":  "exportTo . hides it from web",
				"api.example.com": "declared and visible; port 8443 not among its ports 443",
				"203.0.113.7":     "declared and visible; refused anyway: entry newer than the log, or a Sidecar egress list excludes it",
				"github.com":      "no ServiceEntry",
			},
		},
		{
			// A Kubernetes Service refused by the source's proxy is hidden by
			// a Sidecar egress list or exportTo; a ServiceEntry would be the
			// wrong fix.
			name:   "in-cluster Service blackholed",
			target: from,
			in: seInput{Mesh: mesh, Entries: 3, Hosts: []proxylog.Blackholed{
				{Host: "payments.billing.svc.cluster.local", Ports: []int{8080}, Count: 3},
				{Host: "github.com", Ports: []int{443}, Count: 1},
			}},
			status: StatusFail,
			summary: "REGISTRY_ONLY: 1 external host sent to BlackHoleCluster; no ServiceEntry for github.com; " +
				"in-cluster payments.billing.svc.cluster.local sent to BlackHoleCluster: not a ServiceEntry case; read the Sidecar egress hosts of web and the Service's networking.istio.io/exportTo",
			facts: Facts{"se_unregistered_hosts": []string{"github.com"}, "se_in_cluster_hosts": []string{"payments.billing.svc.cluster.local"}},
			rows: map[string]string{
				"payments.billing.svc.cluster.local": "in-cluster Service: a Sidecar egress list or its networking.istio.io/exportTo annotation hides it from web",
			},
		},
		{
			name:   "only an in-cluster Service blackholed",
			target: from,
			in: seInput{Mesh: mesh, Entries: 3, Hosts: []proxylog.Blackholed{
				{Host: "payments.billing.svc", Ports: []int{8080}, Count: 3},
			}},
			status:  StatusWarn,
			summary: "REGISTRY_ONLY: in-cluster payments.billing.svc sent to BlackHoleCluster: not a ServiceEntry case; read the Sidecar egress hosts of web and the Service's networking.istio.io/exportTo",
			facts:   Facts{"se_unregistered_hosts": []string{}, "se_in_cluster_hosts": []string{"payments.billing.svc"}},
		},
		{
			name:    "nothing blackholed",
			target:  from,
			in:      seInput{Mesh: mesh},
			status:  StatusPass,
			summary: "outbound policy REGISTRY_ONLY; no BlackHoleCluster traffic in web/web-1's proxy log",
			facts:   Facts{"se_registry_only": true},
		},
		{
			name:   "a Sidecar makes the namespace REGISTRY_ONLY under an ALLOW_ANY mesh",
			target: from,
			in: func() seInput {
				sc := &networkingv1.Sidecar{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "web"}}
				sc.Spec.OutboundTrafficPolicy = &networkingv1alpha3.OutboundTrafficPolicy{}
				return seInput{Sidecar: sc, Hosts: hosts[3:]}
			}(),
			status:  StatusFail,
			summary: "REGISTRY_ONLY: 1 external host sent to BlackHoleCluster; no ServiceEntry for github.com",
			facts:   Facts{"se_registry_only": true, "se_unregistered_hosts": []string{"github.com"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluateServiceEntry(tc.target, tc.in)
			mustAllFacts(t, ServiceEntryProbe{}, r)
			if r.Status != tc.status || r.Summary != tc.summary {
				t.Errorf("got %s %q\nwant %s %q", r.Status, r.Summary, tc.status, tc.summary)
			}
			for k, want := range tc.facts {
				if got := r.Facts[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("fact %s = %#v, want %#v", k, got, want)
				}
			}
			for host, want := range tc.rows {
				found := false
				for _, row := range r.Evidence.Rows {
					if row[0] == host {
						found = true
						if row[4] != want {
							t.Errorf("%s verdict %q, want %q", host, row[4], want)
						}
					}
				}
				if !found {
					t.Errorf("no evidence row for %s", host)
				}
			}
		})
	}
}

func TestServiceEntryProbeThroughClusterReads(t *testing.T) {
	ctx := context.Background()
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	src := cluster.PodRef{Namespace: "web", Name: "web-1"}
	objs := func() []runtime.Object {
		return []runtime.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: mesh.MeshConfigMap, Namespace: "istio-system"},
				Data: map[string]string{"mesh": string(readTestdata(t, "testdata/service-entry/mesh.yaml"))}},
			fxPod("web-1", mesh.SidecarClassic, func(p *corev1.Pod) { p.Namespace = "web"; p.Labels = map[string]string{"app": "web"} }),
			fxSE("istio-system", "github", []string{"github.com"}, []uint32{443}),
		}
	}
	newSECluster := func() *fakeCluster {
		f := newFakeCluster(t, objs()...)
		f.logs[logKey(src, mesh.ProxyContainer)] = readTestdata(t, "testdata/service-entry/proxy.log")
		return f
	}

	t.Run("log, mesh config and root-namespace entries", func(t *testing.T) {
		f := newSECluster()
		r := Run(ctx, ServiceEntryProbe{}, f, target)
		mustAllFacts(t, ServiceEntryProbe{}, r)
		want := []string{"203.0.113.7", "api.example.com", "api.stripe.com"}
		if r.Status != StatusFail || r.Facts["se_registry_only"] != true || !reflect.DeepEqual(r.Facts["se_unregistered_hosts"], want) {
			t.Fatalf("%s %q %#v", r.Status, r.Summary, r.Facts)
		}
		if o := f.lastLogOptions; o.Container != mesh.ProxyContainer || o.Since != proxylog.BlackholeWindow || o.TailLines != proxylog.AccessLogTailLines || o.LimitBytes != proxylog.AccessLogTailLines*proxylog.LineAllowance {
			t.Errorf("log read unbounded: %+v", o)
		}
		if !strings.Contains(strings.Join(r.Commands, "\n"), "kubectl logs -n web web-1 -c istio-proxy --since=30m") {
			t.Errorf("commands %q", r.Commands)
		}
	})
	t.Run("log unreadable", func(t *testing.T) {
		f := newFakeCluster(t, objs()...)
		r := Run(ctx, ServiceEntryProbe{}, f, target)
		if r.Status != StatusError || len(r.Facts) != 0 || !strings.Contains(r.Summary, "read the istio-proxy log of web/web-1") {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("ServiceEntries forbidden", func(t *testing.T) {
		f := newSECluster()
		f.forbid("list", "serviceentries")
		r := Run(ctx, ServiceEntryProbe{}, f, target)
		if r.Status != StatusError || len(r.Facts) != 0 || !strings.Contains(r.Summary, "forbidden: cannot list ServiceEntries in web") {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
	})
	// The ServiceEntries are read as the config model reads every rule:
	// one list across all namespaces. Refused there (a namespaced role),
	// they are read in the caller's, the target's and the root namespace,
	// and "no ServiceEntry" is said with that bound.
	t.Run("all-namespaces list refused: partial", func(t *testing.T) {
		f := newSECluster()
		for _, resource := range istioconfig.RuleResources() {
			f.forbidAllNamespaces("list", resource)
		}
		r := Run(ctx, ServiceEntryProbe{}, f, target)
		mustAllFacts(t, ServiceEntryProbe{}, r)
		if partial, _ := r.Facts["se_rules_partial"].(string); r.Status != StatusFail || !strings.Contains(partial, "namespaces other than") {
			t.Fatalf("%s %q %#v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("Sidecar CRD absent is an error: Istio is not installed whole", func(t *testing.T) {
		f := newSECluster()
		f.withoutKind("sidecars")
		r := Run(ctx, ServiceEntryProbe{}, f, target)
		if r.Status != StatusError || !strings.Contains(r.Summary, "cannot list Sidecars in all namespaces") {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
	t.Run("source pod absent", func(t *testing.T) {
		f := newFakeCluster(t)
		r := Run(ctx, ServiceEntryProbe{}, f, target)
		if r.Status != StatusError || r.Summary != "cannot get pod web/web-1: not found" {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
	t.Run("no source", func(t *testing.T) {
		r := Run(ctx, ServiceEntryProbe{}, newFakeCluster(t), cluster.Target{Namespace: "shop", Service: "orders"})
		mustAllFacts(t, ServiceEntryProbe{}, r)
		if r.Status != StatusSkipped || r.Facts["se_registry_only"] != false {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
	})
}

func TestIsInClusterHost(t *testing.T) {
	for host, want := range map[string]bool{
		"payments.billing.svc":               true,
		"payments.billing.svc.cluster.local": true,
		"payments.billing.svc.corp.internal": true,
		"api.svc.example.com":                false,
		"github.com":                         false,
		"billing.svc":                        false,
		"203.0.113.7":                        false,
	} {
		if got := isInClusterHost(host); got != want {
			t.Errorf("isInClusterHost(%q) = %v, want %v", host, got, want)
		}
	}
}
