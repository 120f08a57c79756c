package istiod

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseClusterz(t *testing.T) {
	only, err := ParseClusterz(sample(t, "clusterz-config-only.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Clusters{{ID: "Kubernetes", SyncStatus: SyncStatusSynced}}); !reflect.DeepEqual(only, want) {
		t.Errorf("config only = %+v, want %+v", only, want)
	}
	if _, ok := only.Find("cluster2"); ok {
		t.Error("cluster2 found in clusterz without a remote secret")
	}
	if only[0].Remote() {
		t.Error("the config cluster is not remote")
	}

	remote, err := ParseClusterz(sample(t, "clusterz-remote.json"))
	if err != nil {
		t.Fatal(err)
	}
	c2, ok := remote.Find("cluster2")
	if !ok || c2.SyncStatus != SyncStatusSynced || !c2.Remote() {
		t.Fatalf("cluster2 = %+v, %v", c2, ok)
	}
	if ns, name := c2.Secret(); ns != "istio-system" || name != "istio-remote-secret-cluster2" {
		t.Errorf("secret = %s/%s", ns, name)
	}
	if remote[0].ID != "Kubernetes" || remote[0].Remote() {
		t.Errorf("first = %+v, want the config cluster", remote[0])
	}
}

func TestParseNetworkz(t *testing.T) {
	none, err := ParseNetworkz(sample(t, "networkz-none.json"))
	if err != nil || len(none) != 0 {
		t.Fatalf("null = %+v, %v", none, err)
	}
	// Once a gateway existed and istiod dropped it, networkz is an
	// empty list, not null.
	dropped, err := ParseNetworkz(sample(t, "networkz-dropped.json"))
	if err != nil || len(dropped) != 0 {
		t.Fatalf("[] = %+v, %v", dropped, err)
	}
	gws, err := ParseNetworkz(sample(t, "networkz-eastwest.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := NetworkGateway{Network: "network2", Cluster: "cluster2", Addr: "172.18.2.10", Port: 15443}
	if len(gws) != 1 || !reflect.DeepEqual(gws[0], want) {
		t.Errorf("gateways = %+v, want [%+v]", gws, want)
	}
}

func TestParseEndpointShardz(t *testing.T) {
	all, err := ParseEndpointShardz(sample(t, "endpointShardz-eastwest.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Host != "orders.shop.svc.cluster.local" || all[0].Namespace != "shop" {
		t.Fatalf("services = %+v", all)
	}
	s := all[0]
	var keys []string
	for _, sh := range s.Shards {
		keys = append(keys, sh.Key())
	}
	if strings.Join(keys, ",") != "Kubernetes/Kubernetes,Kubernetes/cluster2" {
		t.Errorf("shard keys = %v", keys)
	}
	if !reflect.DeepEqual(s.ServiceAccounts, []string{"spiffe://cluster.local/ns/shop/sa/default"}) {
		t.Errorf("service accounts = %v", s.ServiceAccounts)
	}
	c2, ok := s.Shard("cluster2")
	if !ok || c2.Provider != "Kubernetes" || len(c2.Endpoints) != 3 {
		t.Fatalf("cluster2 shard = %+v, %v", c2, ok)
	}
	mtls := c2.Endpoints[0]
	if mtls.Address() != "10.245.1.10" || mtls.EndpointPort != 8080 || mtls.Network != "network2" || mtls.ClusterID != "cluster2" ||
		mtls.TLSMode != "istio" || mtls.HealthStatus != Healthy || mtls.WorkloadName != "orders-c2" || mtls.ServicePortName != "http" ||
		mtls.ServiceAccount != "spiffe://cluster.local/ns/shop/sa/default" || mtls.Labels["topology.istio.io/cluster"] != "cluster2" {
		t.Errorf("cluster2's mTLS endpoint = %+v", mtls)
	}
	if plain := c2.Endpoints[1]; plain.Address() != "10.245.1.11" || plain.TLSMode != "disabled" {
		t.Errorf("cluster2's plaintext endpoint = %+v", plain)
	}
	if local, _ := s.Shard("Kubernetes"); len(local.Endpoints) != 1 || local.Endpoints[0].Network != "network1" {
		t.Errorf("config cluster's shard = %+v", local)
	}

	flat, err := ParseEndpointShardz(sample(t, "endpointShardz-flat.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range flat[0].Shards {
		for _, e := range sh.Endpoints {
			if e.Network != "" {
				t.Errorf("flat: %s on network %q", e.Address(), e.Network)
			}
		}
	}

	none, err := ParseEndpointShardz(sample(t, "endpointShardz-eastwest.json"), func(host, ns string) bool { return host == "other.shop.svc.cluster.local" })
	if err != nil || len(none) != 0 {
		t.Errorf("match of another host = %+v, %v", none, err)
	}
}

// Shapes the lab's istiod does not write: an older istiod's single Address,
// a shard keyed by the cluster alone, ServiceAccounts as a list, a health
// it does not know. Hand-written from the fields' history in
// pilot/pkg/model (IstioEndpoint.Address before dual-stack).
func TestParseEndpointShardzOtherShapes(t *testing.T) {
	data := []byte(`{"a.b.svc.cluster.local":{"b":{"Shards":{"Kubernetes":[{"Address":"10.0.0.1","EndpointPort":80,"HealthStatus":7,"Locality":{"Label":"r/z/s","ClusterID":"Kubernetes"}}]},"ServiceAccounts":["spiffe://td/ns/b/sa/x"]}}}`)
	got, err := ParseEndpointShardz(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh := got[0].Shards[0]
	if sh.Key() != "Kubernetes" || sh.Provider != "" || sh.Cluster != "Kubernetes" {
		t.Errorf("shard = %+v", sh)
	}
	e := sh.Endpoints[0]
	if e.Address() != "10.0.0.1" || e.Locality != "r/z/s" || e.ClusterID != "Kubernetes" || e.HealthStatus.String() != "HealthStatus(7)" {
		t.Errorf("endpoint = %+v", e)
	}
	if !reflect.DeepEqual(got[0].ServiceAccounts, []string{"spiffe://td/ns/b/sa/x"}) {
		t.Errorf("service accounts = %v", got[0].ServiceAccounts)
	}
}

func TestParseRefusesWhatIsNotIstiodsJSON(t *testing.T) {
	for _, in := range []string{"", "404 page not found", "Proxy not connected", "{", `{"id":"x"}`} {
		if _, err := ParseClusterz([]byte(in)); err == nil {
			t.Errorf("clusterz %q: no error", in)
		}
		if _, err := ParseNetworkz([]byte(in)); err == nil {
			t.Errorf("networkz %q: no error", in)
		}
	}
	for _, in := range []string{"", "404 page not found", "[]", `{"h":{"ns":{"Shards":[]}}}`} {
		if _, err := ParseEndpointShardz([]byte(in), nil); err == nil {
			t.Errorf("endpointShardz %q: no error", in)
		}
	}
	for _, in := range []string{"null", "[]"} {
		if _, err := ParseClusterz([]byte(in)); err == nil {
			t.Errorf("clusterz %q (not even the config cluster): no error", in)
		}
	}
	if _, err := ParseClusterz([]byte(`[{"secretName":"a/b"}]`)); err == nil {
		t.Error("clusterz entry without id: no error")
	}
}
