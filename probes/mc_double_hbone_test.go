package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
)

// hboneTarget is the caller web-1 calling orders.shop:8080.
var hboneTarget = cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}}

// networkz as the lab's istiod (the pin) wrote it for an istio-east-west
// Gateway (listener mesh 15008 HBONE, spec.addresses 172.18.2.20):
// handleGatewayResource sets Port and HBONEPort both to 15008 (#61618).
func hboneNetworkz(t *testing.T) []istiodparse.NetworkGateway {
	t.Helper()
	gws, err := istiodparse.ParseNetworkz(istiodSample(t, "networkz-hbone.json"))
	if err != nil {
		t.Fatal(err)
	}
	return gws
}

// The caller's outbound cluster as Envoy reports it when istiod pushed it
// the gateway's address at hostPort for network2's endpoints.
func hboneClusters(t *testing.T, hostPort string) []envoy.Cluster {
	t.Helper()
	addr, port, _ := strings.Cut(hostPort, ":")
	body := `{"cluster_statuses":[{"name":"outbound|8080||orders.shop.svc.cluster.local","added_via_api":true,"host_statuses":[
	  {"address":{"socket_address":{"address":"10.1.0.5","port_value":8080}},"health_status":{"eds_health_status":"HEALTHY"},"weight":1},
	  {"address":{"socket_address":{"address":"` + addr + `","port_value":` + port + `}},"health_status":{"eds_health_status":"HEALTHY"},"weight":1}]}]}`
	cs, err := envoy.ParseClusters([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// The sidecar holds the gateway at its HBONE port: istiod pushed it, high.
func TestMultiClusterHBONEEndpointPushedToSidecar(t *testing.T) {
	r := evaluateMultiClusterHBONE(hboneTarget, hboneInput{Gateways: hboneNetworkz(t), Clusters: hboneClusters(t, "172.18.2.20:15008")})
	got := r.Facts["mchbone_caller_endpoints"].([]string)
	if r.Status != StatusFail || len(got) != 1 || got[0] != "outbound|8080||orders.shop.svc.cluster.local: 172.18.2.20:15008 (network network2)" {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
	if gws := r.Facts["mchbone_gateways"].([]string); len(gws) != 1 || gws[0] != "network2: 172.18.2.20:15008 (cluster cluster2)" {
		t.Fatalf("mchbone_gateways = %q", gws)
	}
}

// A classic gateway (15443 for sidecars, 15008 for ambient) is handed on
// 15443: nothing to find, though it has an HBONE port.
func TestMultiClusterHBONEClassicGatewayIsFine(t *testing.T) {
	gws, err := istiodparse.ParseNetworkz([]byte(`[{"Network":"network2","Cluster":"cluster2","Addr":"172.18.2.10","Port":15443,"HBONEPort":15008}]`))
	if err != nil {
		t.Fatal(err)
	}
	r := evaluateMultiClusterHBONE(hboneTarget, hboneInput{Gateways: gws, Clusters: hboneClusters(t, "172.18.2.10:15443")})
	if r.Status != StatusPass || len(r.Facts["mchbone_caller_endpoints"].([]string)) != 0 || len(r.Facts["mchbone_gateways"].([]string)) != 0 {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// The gateway listed but the caller's Envoy not read: the gateway stands
// (what istiod would hand a sidecar), the endpoints are unknown, never
// "none".
func TestMultiClusterHBONEClustersUnreadIsUnknown(t *testing.T) {
	r := evaluateMultiClusterHBONE(hboneTarget, hboneInput{Gateways: hboneNetworkz(t), ClustersUnknown: "read Envoy /clusters of shop/web-1: refused"})
	if _, set := r.Facts["mchbone_caller_endpoints"]; set {
		t.Fatalf("caller endpoints set though /clusters was not read: %v", r.Facts)
	}
	if r.Facts["mchbone_clusters_read"] != false || len(r.Facts["mchbone_gateways"].([]string)) != 1 || r.Status != StatusFail {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// networkz not read: neither the gateways nor the caller's endpoints at
// them are known, though the caller holds a 15008 endpoint.
func TestMultiClusterHBONENetworkzUnreadIsUnknown(t *testing.T) {
	r := evaluateMultiClusterHBONE(hboneTarget, hboneInput{GatewaysUnknown: "istiod's /debug/networkz not read: forbidden", Clusters: hboneClusters(t, "172.18.2.20:15008")})
	for _, f := range []string{"mchbone_gateways", "mchbone_caller_endpoints"} {
		if _, set := r.Facts[f]; set {
			t.Errorf("%s set though networkz was not read: %v", f, r.Facts)
		}
	}
	if r.Facts["mchbone_networkz_read"] != false || r.Status != StatusWarn {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// Run on a cluster whose istiod answers networkz and whose caller's
// Envoy is not in the input: the gateway from istiod's word, the
// endpoints unknown (the medium rule's facts), never "no endpoint".
func TestMultiClusterHBONERunReadsIstiodAndEnvoy(t *testing.T) {
	c := withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), "", "networkz-hbone.json")
	r := MultiClusterHBONEProbe{}.Run(context.Background(), c, hboneTarget)
	if _, set := r.Facts["mchbone_caller_endpoints"]; set || r.Facts["mchbone_clusters_read"] != false || r.Facts["mchbone_networkz_read"] != true ||
		len(r.Facts["mchbone_gateways"].([]string)) != 1 {
		t.Fatalf("%s: %s %v", r.Status, r.Summary, r.Facts)
	}
	// A caller without a sidecar: nothing is handed to it by EDS.
	noSidecar := withRemotes{Cluster: recordedDocs(t, mcServiceDoc, "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop}\nspec: {containers: [{name: web, image: web}]}\nstatus: {phase: Running, podIP: 10.1.0.9}").(*recorded.Cluster),
		remotes: []cluster.Remote{{Context: "ctx2", Cluster: recordedDocs(t, mcServiceDoc)}}}
	if r := (MultiClusterHBONEProbe{}).Run(context.Background(), noSidecar, hboneTarget); r.Status != StatusSkipped || !strings.Contains(r.Summary, "no istio-proxy") {
		t.Fatalf("no sidecar: %s: %s", r.Status, r.Summary)
	}
	// One cluster: said as the other multi-cluster steps say it.
	if r := (MultiClusterHBONEProbe{}).Run(context.Background(), recordedDocs(t, mcServiceDoc), hboneTarget); r.Status != StatusSkipped || r.Summary != cluster.RemotesNotRecorded {
		t.Fatalf("one cluster: %s: %s", r.Status, r.Summary)
	}
}
