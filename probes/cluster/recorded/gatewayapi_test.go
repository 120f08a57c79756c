package recorded_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

const gatewayAPIManifests = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: istio}
spec: {controllerName: istio.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: shop, generation: 2}
spec:
  parentRefs: [{name: public, namespace: infra}]
  hostnames: [shop.example.com]
  rules: [{backendRefs: [{name: web, port: 8080}]}]
status:
  parents:
  - parentRef: {name: public, namespace: infra}
    controllerName: istio.io/gateway-controller
    conditions: [{type: Accepted, status: "False", reason: NotAllowedByListeners, observedGeneration: 2, lastTransitionTime: "2026-11-02T09:00:00Z", message: m}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: web}
spec:
  parentRefs: [{name: public, namespace: infra}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-web, namespace: shop}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: web}]
  to: [{group: "", kind: Service}]
`

// The Gateway API's routes, grants and classes: served from a recording
// (every namespace, or one), through the read cache, and kept by a
// Recorder so that a capture replays them.
func TestGatewayAPIReads(t *testing.T) {
	fsys := fstest.MapFS{
		"scenarios/gw/scenario.yaml":       {Data: []byte("name: gw\ntarget: {namespace: shop, service: web}\n")},
		"scenarios/gw/manifests/shop.yaml": {Data: []byte(gatewayAPIManifests)},
	}
	s, err := recorded.Load(fsys, "gw")
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	rec := recorded.NewRecorder(c)
	check := func(name string, c cluster.Cluster) {
		t.Helper()
		ctx := context.Background()
		all, err := cluster.GatewayAPIList(ctx, c, cluster.HTTPRoutes, "")
		if err != nil || len(all) != 2 {
			t.Fatalf("%s: HTTPRoutes of every namespace = %v, %v", name, all, err)
		}
		first, ok := all[0].(*gatewayv1.HTTPRoute)
		if !ok || first.Namespace != "shop" || first.Name != "web" || first.Generation != 2 || len(first.Status.Parents) != 1 ||
			first.Status.Parents[0].Conditions[0].Reason != "NotAllowedByListeners" {
			t.Errorf("%s: first HTTPRoute %+v, want shop/web with its status", name, all[0])
		}
		if web, err := cluster.GatewayAPIList(ctx, c, cluster.HTTPRoutes, "web"); err != nil || len(web) != 1 {
			t.Errorf("%s: HTTPRoutes of web = %v, %v", name, web, err)
		}
		grants, err := cluster.GatewayAPIList(ctx, c, cluster.ReferenceGrants, "shop")
		if g, ok := first0[*gatewayv1.ReferenceGrant](grants); err != nil || !ok || g.Spec.From[0].Namespace != "web" {
			t.Errorf("%s: ReferenceGrants = %v, %v", name, grants, err)
		}
		classes, err := cluster.GatewayAPIList(ctx, c, cluster.GatewayClasses, "shop")
		if g, ok := first0[*gatewayv1.GatewayClass](classes); err != nil || !ok || g.Spec.ControllerName != "istio.io/gateway-controller" {
			t.Errorf("%s: GatewayClasses = %v, %v (cluster-scoped: the namespace is not a filter)", name, classes, err)
		}
		if none, err := cluster.GatewayAPIList(ctx, c, cluster.TCPRoutes, ""); err != nil || len(none) != 0 {
			t.Errorf("%s: TCPRoutes = %v, %v; want none", name, none, err)
		}
	}
	check("recording", c)
	check("cache", cluster.NewCache(c))
	check("recorder", rec)

	files, err := rec.Scenario(s.Target, nil).Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	r, err := recorded.LoadRecording(files, "capture", "default")
	if err != nil {
		t.Fatal(err)
	}
	again, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	check("replayed capture", again)
}

func first0[T runtime.Object](objs []runtime.Object) (T, bool) {
	var zero T
	if len(objs) == 0 {
		return zero, false
	}
	t, ok := objs[0].(T)
	return t, ok
}

// Not exported is not absent: a dump that holds no HTTPRoute at all, or
// nothing of the namespace listed, says nothing of the cluster's; a
// refused list is replayed as refused.
func TestGatewayAPIListsOfADump(t *testing.T) {
	objs, err := manifests.Decode("dump.yaml", []byte(gatewayAPIManifests), true)
	if err != nil {
		t.Fatal(err)
	}
	s := recorded.FromObjects("dump", objs)
	s.Dump = true
	refused := apierrors.NewForbidden(schema.GroupResource{Group: cluster.GatewayAPIGroup, Resource: "grpcroutes"}, "", errors.New("no"))
	rec := recorded.NewRecorder(failingGRPC{recordedCluster(t, s), refused})
	if _, err := cluster.GatewayAPIList(context.Background(), rec, cluster.GRPCRoutes, ""); !apierrors.IsForbidden(err) {
		t.Fatalf("GRPCRoutes through the recorder = %v, want refused", err)
	}
	replay := rec.Scenario(s.Target, nil)
	replay.Dump = true
	c := recordedCluster(t, replay)
	ctx := context.Background()
	if _, err := cluster.GatewayAPIList(ctx, c, cluster.GRPCRoutes, ""); !apierrors.IsForbidden(err) {
		t.Errorf("a refused list replays as %v, want refused", err)
	}
	if _, err := cluster.GatewayAPIList(ctx, c, cluster.TLSRoutes, ""); !errors.Is(err, cluster.ErrNotInInput) {
		t.Errorf("TLSRoutes of a dump that holds none = %v, want ErrNotInInput", err)
	}
	dump := recordedCluster(t, s)
	if _, err := cluster.GatewayAPIList(ctx, dump, cluster.HTTPRoutes, "payments"); !errors.Is(err, cluster.ErrNotInInput) {
		t.Errorf("HTTPRoutes of a namespace the dump holds nothing of = %v, want ErrNotInInput", err)
	}
	if routes, err := cluster.GatewayAPIList(ctx, dump, cluster.HTTPRoutes, ""); err != nil || len(routes) != 2 {
		t.Errorf("HTTPRoutes of every namespace = %v, %v", routes, err)
	}
}

func recordedCluster(t *testing.T, s *recorded.Scenario) cluster.Cluster {
	t.Helper()
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failingGRPC refuses the GRPCRoute list, as a role without grpcroutes
// does.
type failingGRPC struct {
	cluster.Cluster
	err error
}

func (f failingGRPC) GatewayAPIList(ctx context.Context, kind cluster.GatewayAPIKind, namespace string) ([]runtime.Object, error) {
	if kind == cluster.GRPCRoutes {
		return nil, f.err
	}
	return cluster.GatewayAPIList(ctx, f.Cluster, kind, namespace)
}
