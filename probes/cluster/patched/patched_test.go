package patched_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/patched"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/patch"
)

func scenario(t *testing.T, name string) cluster.Cluster {
	t.Helper()
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPatchesApplyAsTheObjectsAreRead(t *testing.T) {
	ctx := context.Background()
	base := scenario(t, "subset-no-pods")
	shift := patch.Patch{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Namespace: "shop", Name: "orders", Type: patch.JSON,
		Patch: []byte(`[{"op":"test","path":"/spec/http/0/route/1/destination/subset","value":"v2"},{"op":"add","path":"/spec/http/0/route/0/weight","value":100},{"op":"remove","path":"/spec/http/0/route/1"}]`)}
	label := patch.Patch{APIVersion: "v1", Kind: "Namespace", Name: "shop", Type: patch.Merge, Patch: []byte(`{"metadata":{"labels":{"team":"orders"}}}`)}
	dr := patch.Patch{APIVersion: "networking.istio.io/v1", Kind: "DestinationRule", Namespace: "istio-system", Name: "new", Type: patch.Create,
		Patch: []byte(`{"apiVersion":"networking.istio.io/v1","kind":"DestinationRule","metadata":{"name":"new","namespace":"istio-system"},"spec":{"host":"x"}}`)}
	unread := patch.Patch{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "nobody-reads-me", Type: patch.Merge, Patch: []byte(`{"metadata":{"labels":{"a":"b"}}}`)}
	c, err := patched.New(base, []patch.Patch{shift, label, dr, unread}, true)
	if err != nil {
		t.Fatal(err)
	}
	vss, err := c.VirtualServices(ctx, "shop")
	if err != nil || len(vss) != 1 {
		t.Fatalf("virtualservices: %v %v", vss, err)
	}
	if r := vss[0].Spec.GetHttp()[0].GetRoute(); len(r) != 1 || r[0].GetWeight() != 100 || r[0].GetDestination().GetSubset() != "v1" {
		t.Errorf("patched route: %+v", r)
	}
	orig, _ := base.VirtualServices(ctx, "shop")
	if len(orig[0].Spec.GetHttp()[0].GetRoute()) != 2 {
		t.Error("the base cluster's object was changed")
	}
	// As the API server does: a spec change moves the generation, so the
	// status written for the object as read is of an older one.
	if g := orig[0].Generation; g == 0 || vss[0].Generation != g+1 {
		t.Errorf("generation %d after a spec change of generation %d: want one more", vss[0].Generation, g)
	}
	ns, err := c.GetNamespace(ctx, "shop")
	if err != nil || ns.Labels["team"] != "orders" {
		t.Errorf("namespace labels: %v %v", ns.Labels, err)
	}
	if orig, _ := base.GetNamespace(ctx, "shop"); ns.Generation != orig.Generation {
		t.Errorf("a label change moved the generation from %d to %d", orig.Generation, ns.Generation)
	}
	drs, err := c.DestinationRules(ctx, "istio-system")
	if err != nil || len(drs) != 1 || drs[0].Spec.GetHost() != "x" {
		t.Errorf("created rule: %v %v", drs, err)
	}
	// The config model lists the rules of every namespace at once: an
	// object a patch creates is in that list too, whatever its namespace.
	all, err := c.DestinationRules(ctx, "")
	if err != nil || !slices.ContainsFunc(all, func(dr *networkingv1.DestinationRule) bool { return dr.Namespace == "istio-system" && dr.Name == "new" }) {
		t.Errorf("the list of every namespace lacks the created rule: %v %v", all, err)
	}
	problems := c.Problems()
	if len(problems) != 1 || !strings.Contains(problems[0], "Service shop/nobody-reads-me was not read") {
		t.Errorf("problems = %q", problems)
	}
	if _, err := c.EnvoyAdmin(ctx, cluster.PodRef{Namespace: "shop", Name: "web-5b7d9c6f4-q8w2e"}, "/clusters?format=json"); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("a runtime read of a configuration-only world: %v", err)
	}
	if _, err := patched.New(base, []patch.Patch{{Kind: "Deployment", APIVersion: "apps/v1", Name: "x", Type: patch.Strategic}}, true); err == nil {
		t.Error("a kind no probe reads was accepted")
	}
}

func TestAPatchThatDoesNotApplyIsAProblem(t *testing.T) {
	bad := patch.Patch{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Namespace: "shop", Name: "orders", Type: patch.JSON,
		Patch: []byte(`[{"op":"test","path":"/spec/http/0/route/1/destination/subset","value":"canary"}]`)}
	c, err := patched.New(scenario(t, "subset-no-pods"), []patch.Patch{bad}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.VirtualServices(context.Background(), "shop"); err == nil {
		t.Fatal("a failing patch served the object unpatched")
	}
	if p := c.Problems(); len(p) != 1 || !strings.Contains(p[0], "VirtualService shop/orders") {
		t.Errorf("problems = %q", p)
	}
}
