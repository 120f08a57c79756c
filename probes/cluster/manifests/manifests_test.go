package manifests_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sort"
	"strings"
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// TestLoadManifestsKubectlDump reads `kubectl get -o yaml` output: a List
// of mixed kinds, fields from a newer Kubernetes (kept lenient for real
// dumps), and Istio objects at the older versions a cluster may serve.
func TestLoadManifestsKubectlDump(t *testing.T) {
	set, err := manifests.Load([]string{"testdata/kubectl-dump"}, manifests.Options{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Skipped) != 0 || set.Files != 2 || len(set.ImpliedNamespaces) != 0 {
		t.Errorf("skipped %v, files %d, implied namespaces %v", set.Skipped, set.Files, set.ImpliedNamespaces)
	}
	s := recorded.FromObjects("testdata/kubectl-dump", set.Objects)
	if len(s.Objects) != 6 || len(s.Envoy) != 0 || len(s.Logs) != 0 || len(s.Istiod) != 0 {
		t.Fatalf("objects %d, envoy %d, logs %d, istiod %d; want 6 objects and no recorded data", len(s.Objects), len(s.Envoy), len(s.Logs), len(s.Istiod))
	}
	ci := cluster.ClusterInfo{Context: "prod-eu-west-1"}
	c, err := recorded.NewClusterWithInfo(s, ci)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if info := c.Info(); info.Context != "prod-eu-west-1" || info.ControlPlaneNamespace != cluster.DefaultControlPlane || !strings.Contains(info.Server, "kubectl-dump") {
		t.Errorf("Info = %+v", info)
	}
	pods, err := c.ListPods(ctx, "shop", map[string]string{"app": "orders"})
	if err != nil || len(pods) != 1 || pods[0].Status.ContainerStatuses[0].Ready {
		t.Errorf("ListPods = %v, %v", pods, err)
	}
	slices, err := c.EndpointSlices(ctx, "shop", "orders")
	if err != nil || len(slices) != 1 {
		t.Errorf("EndpointSlices = %v, %v", slices, err)
	}
	drs, err := c.DestinationRules(ctx, "shop")
	if err != nil || len(drs) != 1 || drs[0].Spec.GetTrafficPolicy().GetOutlierDetection().GetConsecutive_5XxErrors().GetValue() != 1 {
		t.Fatalf("v1beta1 DestinationRule not served as v1: %v, %v", drs, err)
	}
	if drs[0].APIVersion != networkingv1.SchemeGroupVersion.String() {
		t.Errorf("DestinationRule apiVersion = %q", drs[0].APIVersion)
	}
	if pas, err := c.PeerAuthentications(ctx, "shop"); err != nil || len(pas) != 1 {
		t.Errorf("v1beta1 PeerAuthentication not served as v1: %v, %v", pas, err)
	}
	pod := cluster.PodRef{Namespace: "shop", Name: "orders-69f4d7c8b-fx2mw"}
	_, err = c.EnvoyAdmin(ctx, pod, "/clusters?format=json")
	if !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("EnvoyAdmin on manifests: %v, want ErrNotFound", err)
	}
	if _, err := c.Logs(ctx, pod, cluster.LogOptions{Container: mesh.ProxyContainer}); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("Logs on manifests: %v, want ErrNotFound", err)
	}
	if _, err := c.ServerVersion(ctx); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("ServerVersion on manifests: %v, want ErrNotFound (unknown, not the fake's placeholder)", err)
	}
	// A probe on manifests reads the objects and says plainly what is missing.
	res := probes.Run(ctx, probes.EndpointsProbe{}, c, cluster.Target{Namespace: "shop", Service: "orders", Port: 8080})
	if res.Facts["endpoints_ready"] != 0 || res.Facts["endpoints_not_ready"] != 1 {
		t.Errorf("endpoints probe on manifests: %s %v", res.Summary, res.Facts)
	}
}

// Decode, the strict reader of the scenarios this project writes, still
// names every document of unknown kind together after reading the rest.
func TestDecodeReportsUnknownKinds(t *testing.T) {
	data, err := os.ReadFile("testdata/unknown-kind/all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode("all.yaml", data, false)
	var uk *manifests.UnknownKindError
	if !errors.As(err, &uk) {
		t.Fatalf("error = %v, want *manifests.UnknownKindError", err)
	}
	want := []string{
		"all.yaml document 2: cert-manager.io/v1 Certificate",
		"all.yaml document 3 item 2: monitoring.coreos.com/v1 ServiceMonitor",
	}
	if strings.Join(uk.Documents, "|") != strings.Join(want, "|") || len(objs) != 2 {
		t.Errorf("unknown documents = %q (want %q), %d objects (want 2)", uk.Documents, want, len(objs))
	}
}

// A namespace dump with a cert-manager Certificate in it used to be refused
// whole; now the unknown kinds and a document that does not parse are
// skipped, each named by file and document index, and the rest is read.
func TestLoadSkipsWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "all.yaml", mustRead(t, "testdata/unknown-kind/all.yaml")+"---\napiVersion: v1\nkind: Pod\nmetadata: {name: [broken\n---\nnot: a kubernetes object\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop}\n")
	set, err := manifests.Load([]string{dir}, manifests.Options{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range set.Skipped {
		got = append(got, s.String())
	}
	file := filepath.Join(dir, "all.yaml")
	want := []string{
		file + " document 2 (cert-manager.io/v1 Certificate): " + manifests.ReasonUnknownKind,
		file + " document 3 item 2 (monitoring.coreos.com/v1 ServiceMonitor): " + manifests.ReasonUnknownKind,
		file + " document 4: does not parse",
		file + " document 5: no apiVersion/kind",
	}
	if len(got) != len(want) {
		t.Fatalf("skipped = %q, want %d entries like %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("skipped[%d] = %q, want it to start %q", i, got[i], want[i])
		}
		if strings.Contains(got[i], "\n") {
			t.Errorf("skipped[%d] is not one line: %q", i, got[i])
		}
	}
	if names := objectNames(set); names != "Namespace /shop, Pod shop/web-1, Service shop/orders" {
		t.Errorf("objects = %s", names)
	}
}

// Files, directories (recursively, hidden folders left out), stdin, JSON
// streams and typed API lists are all read, as kubectl -f reads them.
func TestLoadInputsAsUsersHaveThem(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
	write(t, dir, "deep/er/svc.yml", "apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop}\n")
	write(t, dir, "deep/pods.json", `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"orders-1","namespace":"shop"}}]}
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"shop"}}`)
	write(t, dir, ".git/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden, namespace: shop}\n")
	write(t, dir, "README.md", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: readme, namespace: shop}\n")
	dump := write(t, t.TempDir(), "dump.txt", "apiVersion: networking.istio.io/v1beta1\nkind: DestinationRule\nmetadata: {name: orders, namespace: shop}\nspec: {host: orders}\n")
	stdin := strings.NewReader(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"security.istio.io/v1","kind":"PeerAuthentication","metadata":{"name":"default","namespace":"shop"},"spec":{"mtls":{"mode":"STRICT"}}}]}`)

	set, err := manifests.Load([]string{dir, dump, manifests.Stdin}, manifests.Options{Namespace: "default", Stdin: stdin})
	if err != nil {
		t.Fatal(err)
	}
	want := "ConfigMap shop/cfg, DestinationRule shop/orders, Namespace /shop, PeerAuthentication shop/default, Pod shop/orders-1, Service shop/orders"
	if got := objectNames(set); got != want || len(set.Skipped) != 0 || set.Files != 5 {
		t.Errorf("objects = %s\nwant      %s\nskipped %v, files %d (want 5)", got, want, set.Skipped, set.Files)
	}
	if _, err := manifests.Load([]string{manifests.Stdin}, manifests.Options{}); err == nil {
		t.Error("- without a stdin: no error")
	}
}

// A repository of manifests names no namespace: its objects take -n's, as
// `kubectl apply -n` gives them; cluster-scoped kinds keep none. The
// namespace they are in then exists, with unknown labels.
func TestLoadGivesNamespacelessObjectsTheNamespace(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "app.yaml", `apiVersion: v1
kind: Service
metadata: {name: orders}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: orders}
spec: {hosts: [orders]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: billing}
`)
	set, err := manifests.Load([]string{dir}, manifests.Options{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := objectNames(set), "ClusterRole /reader, ConfigMap billing/other, Service shop/orders, VirtualService shop/orders"; got != want {
		t.Errorf("objects = %s, want %s", got, want)
	}
	if strings.Join(set.ImpliedNamespaces, ",") != "billing,shop" {
		t.Errorf("implied namespaces = %v, want billing, shop", set.ImpliedNamespaces)
	}
}

// Two dumps that overlap do not refuse the input: the second copy of an
// object is skipped and says where the first came from.
func TestLoadSkipsSecondCopies(t *testing.T) {
	dir := t.TempDir()
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop}\n"
	write(t, dir, "a.yaml", svc)
	write(t, dir, "b.yaml", svc+"---\napiVersion: v1\nkind: Pod\nmetadata: {generateName: orders-, namespace: shop}\n")
	set, err := manifests.Load([]string{dir}, manifests.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Objects) != 1 || len(set.Skipped) != 2 ||
		!strings.Contains(set.Skipped[0].String(), "Service shop/orders is already read from "+filepath.Join(dir, "a.yaml")+" document 1") ||
		!strings.Contains(set.Skipped[1].String(), "no metadata.name") {
		t.Errorf("objects %d, skipped %v", len(set.Objects), set.Skipped)
	}
}

func TestLoadRefusesNothingToRead(t *testing.T) {
	if _, err := manifests.Load([]string{t.TempDir()}, manifests.Options{}); err == nil || !strings.Contains(err.Error(), "no .yaml") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := manifests.Load([]string{"testdata/does-not-exist"}, manifests.Options{}); err == nil || !strings.Contains(err.Error(), "does-not-exist") {
		t.Errorf("missing path: %v", err)
	}
	only := write(t, t.TempDir(), "x.yaml", "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c}\n")
	if _, err := manifests.Load([]string{only}, manifests.Options{}); err == nil || !strings.Contains(err.Error(), "1 document(s) skipped") {
		t.Errorf("nothing readable: %v", err)
	}
}

func write(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// objectNames lists "Kind namespace/name", sorted.
func objectNames(set *manifests.Set) string {
	var names []string
	for _, obj := range set.Objects {
		m, err := meta.Accessor(obj)
		if err != nil {
			names = append(names, fmt.Sprintf("%T", obj))
			continue
		}
		gvks, _, _ := manifests.Scheme.ObjectKinds(obj)
		names = append(names, fmt.Sprintf("%s %s/%s", gvks[0].Kind, m.GetNamespace(), m.GetName()))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// A dump of a cluster with Gateway API routes used to abort `check -f`
// ("no kind is registered for the type v1.HTTPRoute in scheme", and
// GatewayClass given the -n namespace). Every kind istiod turns into its
// configuration loads, each as the v1 Go type the probes read (v1beta1
// Gateways and ReferenceGrants, v1alpha2 TCPRoutes and TLSRoutes
// converted), cluster-scoped kinds without a namespace; and the recorded
// cluster a triage reads is built from the set.
func TestLoadGatewayAPIDump(t *testing.T) {
	set, err := manifests.Load([]string{"testdata/gateway-api"}, manifests.Options{Namespace: "web"})
	if err != nil {
		t.Fatal(err)
	}
	want := "ClusterRole /meshtriage-readonly, GRPCRoute shop/inventory, Gateway shop/shop-gateway, GatewayClass /istio, HTTPRoute shop/orders, HTTPRoute shop/orders-mesh, " +
		"Node /worker-1, Pod shop/orders-6d9f7b8c5-k2x9p, ReferenceGrant shop/allow-web-routes, Service shop/orders, TCPRoute shop/orders-db, TLSRoute shop/orders-tls"
	if got := objectNames(set); got != want {
		t.Errorf("objects = %s\nwant      %s", got, want)
	}
	for _, obj := range set.Objects {
		gvks, _, _ := manifests.Scheme.ObjectKinds(obj)
		if gvks[0].Group == gatewayv1.GroupName && gvks[0].Version != "v1" {
			t.Errorf("%s is read as %s, want v1 (the version the probes read)", gvks[0].Kind, gvks[0])
		}
		switch o := obj.(type) {
		case *gatewayv1.TLSRoute:
			if len(o.Spec.Hostnames) != 1 || o.Spec.Hostnames[0] != "orders.example.com" || len(o.Spec.Rules) != 1 || len(o.Spec.Rules[0].BackendRefs) != 1 ||
				o.Spec.Rules[0].BackendRefs[0].Name != "orders" || o.Spec.ParentRefs[0].SectionName == nil || *o.Spec.ParentRefs[0].SectionName != "tls" {
				t.Errorf("the v1alpha2 TLSRoute converted to %+v", o.Spec)
			}
		case *gatewayv1.TCPRoute:
			if len(o.Spec.Rules) != 1 || len(o.Spec.Rules[0].BackendRefs) != 1 || o.Spec.Rules[0].BackendRefs[0].Port == nil || *o.Spec.Rules[0].BackendRefs[0].Port != 5432 {
				t.Errorf("the v1alpha2 TCPRoute converted to %+v", o.Spec)
			}
		case *gatewayv1.ReferenceGrant:
			if len(o.Spec.From) != 1 || o.Spec.From[0].Namespace != "web" || o.Spec.To[0].Kind != "Service" {
				t.Errorf("the v1beta1 ReferenceGrant converted to %+v", o.Spec)
			}
		case *gatewayv1.GatewayClass:
			if o.Namespace != "" {
				t.Errorf("GatewayClass given namespace %q: it is cluster-scoped", o.Namespace)
			}
		}
	}
	if len(set.Skipped) != 0 {
		t.Errorf("skipped %v, want none", set.Skipped)
	}
	if _, err := recorded.NewCluster(recorded.FromObjects("dump", set.Objects)); err != nil {
		t.Errorf("the recorded cluster of the set: %v", err)
	}
}

// Every kind of the schemes the decoder registers decodes from a document
// as users write it and is either read or skipped as a kind a triage does
// not read, never refused; and a recording holding every one of them (as
// the strict decoder keeps them) still serves a triage.
func TestEveryRegisteredKindLoads(t *testing.T) {
	var docs []string
	kinds := 0
	for gvk := range manifests.Scheme.AllKnownTypes() {
		// Lists are read item by item; API messages without object
		// metadata (Status, WatchEvent, the options kinds,
		// DeploymentRollback) are no objects a dump holds.
		obj, err := manifests.Scheme.New(gvk)
		if _, noMeta := meta.Accessor(obj); err != nil || noMeta != nil || gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		kinds++
		docs = append(docs, fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: x%d}\n", gvk.GroupVersion(), gvk.Kind, kinds))
	}
	sort.Strings(docs)
	dir := t.TempDir()
	write(t, dir, "all.yaml", strings.Join(docs, "---\n"))
	set, err := manifests.Load([]string{dir}, manifests.Options{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	read := len(set.Objects)
	for _, s := range set.Skipped {
		if s.Reason != manifests.ReasonNotRead {
			t.Errorf("refused: %s", s)
		}
		read += max(s.Documents, 1)
	}
	if read < kinds {
		t.Errorf("%d of %d kinds accounted for", read, kinds)
	}
	objs, err := manifests.Decode("all.yaml", []byte(strings.Join(docs, "---\n")), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recorded.NewCluster(recorded.FromObjects("all", objs)); err != nil {
		t.Errorf("a recording with every kind: %v", err)
	}
	t.Logf("%d kinds: %d read, %d skipped", kinds, len(set.Objects), kinds-len(set.Objects))
}
