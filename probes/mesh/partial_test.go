package mesh_test

import (
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// With the rules of some namespaces only (a namespaced role refused the
// lists across all namespaces), the model says nothing a rule of another
// namespace could change: which VirtualService routes the host, that no
// ServiceEntry declares one, that no DestinationRule defines a subset.
func TestPartialRulesConcludeNoAbsence(t *testing.T) {
	load := func(t *testing.T, file string, read ...string) *mesh.Config {
		objs := meshtest.Objects(t, "testdata/model", "base.yaml", file)
		c := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
		if read != nil {
			c.RulesRead, c.RulesPartial = map[string]bool{}, "the Istio rules of namespaces other than "+strings.Join(read, ", ")+" were not read"
			for _, ns := range read {
				c.RulesRead[ns] = true
			}
		}
		return c
	}
	web := meshtest.CallerOf(t, load(t, "base.yaml"), "web/web-1")
	const orders = "orders.shop.svc.cluster.local"

	t.Run("a VirtualService of a namespace not read could route the host", func(t *testing.T) {
		full := load(t, "vs-host-not-destination.yaml")
		partial := load(t, "vs-host-not-destination.yaml", "web", "shop", "istio-system")
		if u := full.VirtualServiceUnknown(web, "ratings.shop.svc.cluster.local"); u != "" {
			t.Errorf("every namespace read, yet the routes are unknown: %s", u)
		}
		v, err := partial.ViewFor(web, "ratings.shop.svc.cluster.local", 8080)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v.RoutesUnknown, "shop/ratings routes") {
			t.Errorf("RoutesUnknown %q: want the public VirtualService of shop named, and not certain", v.RoutesUnknown)
		}
		// The route's break still stands (the runbook lowers its
		// confidence on dr_routes_unknown): the DestinationRules that
		// define orders' subsets were all read.
		if b := v.Breaks(); len(b) != 1 || b[0].Reason != mesh.BreakSubsetUndefined {
			t.Errorf("breaks %+v, want the undefined subset", b)
		}
	})
	t.Run("an exact host private to the caller's namespace cannot be beaten", func(t *testing.T) {
		c := load(t, "vs-private-beats-older-public.yaml", "web", "shop", "istio-system")
		if u := c.VirtualServiceUnknown(web, orders); u != "" {
			t.Errorf("web's own exact, private VirtualService wins over any other: %s", u)
		}
	})
	t.Run("an exact host private to the caller's namespace with no route for the caller can be beaten", func(t *testing.T) {
		// web's own VirtualService writes no virtual host for web-1, so any
		// exact one with a route could take the host: one of a namespace
		// not read too.
		c := load(t, "vs-first-without-route-for-caller.yaml", "web", "shop", "istio-system")
		v, err := c.ViewFor(web, orders, 8080)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v.RoutesUnknown, "shop/orders routes") {
			t.Errorf("RoutesUnknown %q: want shop/orders named, and not certain", v.RoutesUnknown)
		}
	})
	t.Run("no DestinationRule read in the root namespace: a subset is undecided, not undefined", func(t *testing.T) {
		c := load(t, "vs-host-not-destination.yaml", "web", "shop")
		v, err := c.ViewFor(web, "ratings.shop.svc.cluster.local", 8080)
		if err != nil {
			t.Fatal(err)
		}
		cl := v.Clusters["outbound|8080|v9|orders.shop.svc.cluster.local"]
		if cl == nil || cl.ExistsUnknown == "" || len(v.Breaks()) != 0 {
			t.Errorf("cluster %+v, breaks %+v: want undecided, no break", cl, v.Breaks())
		}
	})
	t.Run("no ServiceEntry among those read says so", func(t *testing.T) {
		c := load(t, "vs-route-to-hidden-serviceentry.yaml", "web", "shop", "istio-system")
		v, err := c.ViewFor(web, orders, 8080)
		if err != nil {
			t.Fatal(err)
		}
		if cl := v.Clusters["outbound|8080||api.partner.example"]; cl == nil || !strings.Contains(cl.Why, "among the ServiceEntries read") {
			t.Errorf("cluster %+v: want the absence bounded by what was read", cl)
		}
	})
}
