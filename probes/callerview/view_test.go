package callerview_test

import (
	"context"
	"testing"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// A triage reads the Services the caller's routes send to, also when the
// VirtualService that routes the host for the caller's port is not the
// first for the host (the first has no route for the caller): ratings,
// where shop's VirtualService sends web-1's requests, is read, so its
// cluster has its endpoint and no route is judged to a Service that is
// only not read.
func TestReadsServicesOfTheVirtualServiceThatRoutes(t *testing.T) {
	objs := meshtest.Objects(t, "../mesh/testdata/model", "base.yaml", "vs-next-routes-to-other-service.yaml")
	c, err := recorded.NewCluster(recorded.FromObjects("vs-next-routes-to-other-service", objs))
	if err != nil {
		t.Fatal(err)
	}
	target := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	cfg, _, views, err := callerview.Read(context.Background(), c, target)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Services["ratings.shop.svc.cluster.local"] == nil {
		t.Fatal("ratings, where web-1's route sends, was not read")
	}
	if len(views) != 1 {
		t.Fatalf("%d views, want one for port 8080", len(views))
	}
	v := views[0]
	if b := v.Breaks(); len(b) != 0 {
		t.Errorf("breaks %+v, want none", b)
	}
	cl := v.Clusters["outbound|8080||ratings.shop.svc.cluster.local"]
	if cl == nil || cl.Serving() != 1 {
		t.Errorf("ratings' cluster %+v, want its one endpoint serving", cl)
	}
}
