//go:build integration

package lab

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// hboneReads is cluster 1 as a triage reads it, its istiod's debug
// endpoints and the caller's Envoy answered by the lab's istiod and the
// caller's xDS client (its /clusters built from what istiod pushed).
type hboneReads struct {
	cluster.Cluster
	istiod *Istiod
	sc     *Sidecar
	remote cluster.Cluster
}

// RemoteClusters: the triage was given cluster 2 (--remote-contexts c2).
func (h hboneReads) RemoteClusters() ([]cluster.Remote, string) {
	return []cluster.Remote{{Context: "c2", Cluster: h.remote}}, ""
}

func (h hboneReads) Istiod(ctx context.Context, _, path string) ([]byte, error) {
	return h.istiod.Get(ctx, path)
}

func (h hboneReads) EnvoyAdmin(_ context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	if pod != h.sc.Pod || path != envoyadmin.ClustersPath {
		return nil, cluster.ErrNotFound
	}
	return protojson.Marshal(h.sc.XDS.Clusters())
}

// An ambient east-west gateway, as gen-eastwest-gateway.sh --ambient
// writes it (a Gateway API Gateway of class istio-east-west labelled with
// its network, one HBONE listener on 15008), is cluster 2's only gateway.
// The lab's istiod lists it in networkz with Port = HBONEPort = 15008
// (network.go handleGatewayResource, istio/istio#61618), and pushes the
// sidecar caller of cluster 1 cluster 2's mTLS endpoints as ADDR:15008
// with tlsMode istio: selectNetworkGateways drops only Port == 0 for a
// sidecar. The multicluster-hbone probe, on those real answers, names the
// endpoint. With MESHLAB_CAPTURE_DIR set it writes istiod's answers
// (probes/parse/istiod/testdata/networkz-hbone.json is its networkz).
func TestDoubleHBONEAgainstIstiod(t *testing.T) {
	m := startMultiClusterLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sc, err := m.istiod.ConnectSidecar(ctx, m.caller)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := m.istiod.AddRemote(ctx, m.c2, remoteClusterID); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := m.istiod.WaitClusterz(wctx, remoteClusterID, "synced"); err != nil {
		t.Fatal(err)
	}
	labelNamespace(t, m.c1, cluster.DefaultControlPlane, networkLabel, "network1")
	labelNamespace(t, m.c2, cluster.DefaultControlPlane, networkLabel, "network2")
	const hboneIP = "172.18.2.20"
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "istio-eastwest", "namespace": cluster.DefaultControlPlane, "labels": map[string]any{networkLabel: "network2"}},
		"spec": map[string]any{"gatewayClassName": "istio-east-west",
			"addresses": []any{map[string]any{"type": "IPAddress", "value": hboneIP}},
			"listeners": []any{map[string]any{"name": "mesh", "port": int64(15008), "protocol": "HBONE"}}},
	}}
	if _, err := m.c2.Dynamic.Resource(gatewayAPIGateways).Namespace(cluster.DefaultControlPlane).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local := "10.244.1.10:8080 weight=1 tlsMode=istio cluster=Kubernetes"
	waitPushedEndpoints(t, sc, local, hboneIP+":15008 weight=2 tlsMode=istio cluster="+remoteClusterID)
	captureDebug(t, m.istiod, "hbone-gateway-api")
	if gws := networkz(t, m.istiod); !slices.Equal(gws, []string{"network2 " + remoteClusterID + " " + hboneIP + ":15008 hbone=15008"}) {
		t.Errorf("networkz = %v", gws)
	}

	c, err := recorded.NewCluster(m.s1)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := recorded.NewCluster(recorded.FromObjects("multicluster/cluster2", meshtest.Objects(t, "testdata/multicluster", "cluster2.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	target := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &sc.Pod}
	r := probes.MultiClusterHBONEProbe{}.Run(ctx, hboneReads{Cluster: c, istiod: m.istiod, sc: sc, remote: c2}, target)
	got, _ := r.Facts["mchbone_caller_endpoints"].([]string)
	if r.Status != probes.StatusFail || len(got) != 1 || !strings.HasSuffix(got[0], hboneIP+":15008 (network network2)") {
		t.Fatalf("probe: %s %s %v", r.Status, r.Summary, r.Facts)
	}
}
