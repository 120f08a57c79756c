package envoy

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// The fixture is a real waypoint's /config_dump: its cluster for httpbin
// is inbound-vip|8000|http|..., its endpoint an HBONE tunnel through the
// connect_originate internal listener. A waypoint probe reads both.
func TestWaypointClusterAndTunnelEndpoint(t *testing.T) {
	// The dump's cluster is for port 8000 and its endpoints for 8100 (the
	// endpoints were dumped after the Service changed port): any port.
	d, err := StreamConfigDump(bytes.NewReader(readTestdata(t, "config_dump.json")), WaypointMatcher("httpbin.default.svc.cluster.local", 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Clusters) != 1 || d.Clusters[0].Name != "inbound-vip|8000|http|httpbin.default.svc.cluster.local" {
		t.Fatalf("clusters %+v", d.Clusters)
	}
	if len(d.Endpoints) != 1 {
		t.Fatalf("endpoints %+v", d.Endpoints)
	}
	ep := d.Endpoints[0]
	if !reflect.DeepEqual(ep.Addresses, []string{"envoy://connect_originate/192.168.195.248:800"}) || ep.Healthy != 1 {
		t.Errorf("endpoints of %s: %+v", ep.Cluster, ep)
	}
	if target, ok := clustername.TunnelTarget(ep.Addresses[0]); !ok || target != "192.168.195.248:800" {
		t.Errorf("tunnel target %q %v", target, ok)
	}
	n, ok := ParseClusterName("inbound-vip|8000|http/v1|httpbin.default.svc.cluster.local;")
	if !ok || n.Direction != "inbound-vip" || n.Subset != "v1" || n.Port != 8000 {
		t.Errorf("ParseClusterName: %+v", n)
	}
	for name, want := range map[string]bool{
		"inbound-vip|8000|http|httpbin.default.svc.cluster.local": true,
		"inbound-vip|8000|tcp|httpbin.default.svc.cluster.local;": true,
		"inbound-vip|9000|http|httpbin.default.svc.cluster.local": false,
		"outbound|8000||httpbin.default.svc.cluster.local":        false,
		"inbound-vip|8000|http|httpbin.other.svc.cluster.local":   false,
	} {
		if got := IsWaypointCluster(name, "httpbin.default.svc.cluster.local", 8000); got != want {
			t.Errorf("IsWaypointCluster(%q) = %v", name, got)
		}
	}
}
