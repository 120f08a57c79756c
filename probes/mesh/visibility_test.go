package mesh_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

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

// A Service port's protocol as istiod's ConvertProtocol reads it: a port
// without a known name is TCP on the well-known ports (SMTP, DNS, MySQL,
// MongoDB), otherwise sniffed (read as HTTP, on a route configuration of
// its own).
func TestPortProtocolAsIstiodReadsIt(t *testing.T) {
	app := func(s string) *string { return &s }
	for _, tc := range []struct {
		port    corev1.ServicePort
		proto   string
		sniffed bool
	}{
		{corev1.ServicePort{Port: 3306}, mesh.ProtocolTCP, false},
		{corev1.ServicePort{Port: 27017, Name: "db"}, mesh.ProtocolTCP, false},
		{corev1.ServicePort{Port: 5432}, mesh.ProtocolHTTP, true},
		{corev1.ServicePort{Port: 8080, Name: "web"}, mesh.ProtocolHTTP, true},
		{corev1.ServicePort{Port: 8080, Name: "http-web"}, mesh.ProtocolHTTP, false},
		{corev1.ServicePort{Port: 8080, Name: "grpc-web"}, mesh.ProtocolHTTP, false},
		{corev1.ServicePort{Port: 9000, Name: "mysql-main"}, mesh.ProtocolTCP, false},
		{corev1.ServicePort{Port: 443, Name: "https"}, mesh.ProtocolTLS, false},
		{corev1.ServicePort{Port: 8080, Name: "tcp", AppProtocol: app("kubernetes.io/h2c")}, mesh.ProtocolHTTP, false},
		{corev1.ServicePort{Port: 8080, Name: "http", AppProtocol: app("tcp")}, mesh.ProtocolTCP, false},
	} {
		if got, sniffed := mesh.PortProtocol(tc.port), mesh.PortSniffed(tc.port); got != tc.proto || sniffed != tc.sniffed {
			t.Errorf("port %d %q (appProtocol %v): %s sniffed %v, want %s sniffed %v", tc.port.Port, tc.port.Name, tc.port.AppProtocol, got, sniffed, tc.proto, tc.sniffed)
		}
	}
}
