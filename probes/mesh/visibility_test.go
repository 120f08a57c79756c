package mesh_test

import (
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// On port 80 istiod routes the host of a VirtualService the caller imports
// though its Sidecar does not select the Service, when the caller has an
// HTTP listener on port 80 (world 3 of seed 24). With every Service known
// the model says so; with only the Services a triage reads (the target's
// and those its routes send to) it cannot know the listener, and says it
// does not know rather than calling the Service hidden.
func TestPortEightyRouteNeedsEveryService(t *testing.T) {
	objs := meshtest.Objects(t, "testdata/model", "base.yaml", "world-24-00003.yaml")
	c := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	caller := meshtest.CallerFrom(t, objs, c, "w00003-a/stock-v1-7")
	const host = "search.w00003-b.svc.cluster.local"
	v, err := c.ViewFor(caller, host, 80)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Visibility.Visible || v.Visibility.Via == "" || v.Visibility.Undecided != "" {
		t.Errorf("every Service known: visibility %+v, want routed on port 80", v.Visibility)
	}
	partial := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	partial.AllServices = false
	for h := range partial.Services {
		if h != host && !strings.HasPrefix(h, "reviews.") {
			delete(partial.Services, h)
		}
	}
	v, err = partial.ViewFor(caller, host, 80)
	if err != nil {
		t.Fatal(err)
	}
	if v.Visibility.Visible || !strings.Contains(v.Visibility.Undecided, "port 80") {
		t.Errorf("only the target's Services read: visibility %+v, want not known", v.Visibility)
	}
	for _, e := range v.Clusters[mesh.PassthroughCluster].Endpoints {
		if e.Sends != mesh.SendsUnknown || e.Mismatch != mesh.MismatchUnknown {
			t.Errorf("endpoint %s: sends %s, mismatch %s: whether the proxy routes the host is not known, nor what it sends", e.Address, e.Sends, e.Mismatch)
		}
	}
}
