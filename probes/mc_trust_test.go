package probes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// selfSignedRoot is a CA certificate as istiod's self-signed CA makes one
// per cluster when no cacerts is plugged in.
func selfSignedRoot(t *testing.T, serial int64, org string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{Organization: []string{org}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func rootConfigMapDoc(ns string, pems ...string) string {
	indented := strings.ReplaceAll(strings.Join(pems, ""), "\n", "\n    ")
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-ca-root-cert, namespace: %s}\ndata:\n  root-cert.pem: |\n    %s", ns, indented)
}

func meshConfigMapDoc(trustDomain string, aliases ...string) string {
	mesh := "trustDomain: " + trustDomain
	if len(aliases) > 0 {
		mesh += "\n    trustDomainAliases: [" + strings.Join(aliases, ", ") + "]"
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  mesh: |\n    " + mesh
}

// trustClusters is twoClusters' mesh (c2's endpoint through its gateway)
// with each cluster's roots and mesh config.
func trustClusters(t *testing.T, localDocs, remoteDocs []string) cluster.Cluster {
	local := recordedDocs(t, append([]string{mcNamespaceDoc("network1"), mcServiceDoc,
		mcPodDoc("web-1", "10.1.0.9", "cluster1"), mcPodDoc("orders-a", "10.1.0.5", "cluster1"), mcSliceDoc("10.1.0.5", "orders-a"),
		strings.ReplaceAll(mcGatewayDoc("network1", 15443), "172.18.2.10", "172.18.1.10")}, localDocs...)...)
	remote := recordedDocs(t, append([]string{mcNamespaceDoc("network2"), mcServiceDoc,
		mcPodDoc("orders-b", "10.2.0.5", "cluster2"), mcSliceDoc("10.2.0.5", "orders-b"), mcGatewayDoc("network2", 15443)}, remoteDocs...)...)
	return withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}
}

func runTrust(t *testing.T, c cluster.Cluster) Result {
	t.Helper()
	r := MultiClusterTrustProbe{}.Run(context.Background(), c, mcTarget)
	if r.Status == StatusError {
		t.Fatalf("error: %s", r.Summary)
	}
	return r
}

// Each cluster kept istiod's own self-signed root: no root in common.
func TestMultiClusterTrustDisjointRoots(t *testing.T) {
	r := runTrust(t, trustClusters(t,
		[]string{rootConfigMapDoc("shop", selfSignedRoot(t, 1, "cluster1")), meshConfigMapDoc("cluster.local")},
		[]string{rootConfigMapDoc("shop", selfSignedRoot(t, 2, "cluster2")), meshConfigMapDoc("cluster.local")}))
	got := r.Facts["mctrust_roots_disjoint"].([]string)
	if r.Status != StatusFail || len(got) != 1 || !strings.HasPrefix(got[0], "ctx2: shop/istio-ca-root-cert roots") || len(r.Facts["mctrust_domain_differs"].([]string)) != 0 {
		t.Fatalf("status %s %v", r.Status, r.Facts)
	}
}

// A plugged-in shared root, one cluster mid-rotation with a second root
// in its bundle: the sets share a certificate.
func TestMultiClusterTrustSharedRootInABundle(t *testing.T) {
	shared, next := selfSignedRoot(t, 7, "mesh-root"), selfSignedRoot(t, 8, "mesh-root-2")
	r := runTrust(t, trustClusters(t,
		[]string{rootConfigMapDoc("shop", shared), meshConfigMapDoc("cluster.local")},
		[]string{rootConfigMapDoc("shop", next, shared), meshConfigMapDoc("cluster.local")}))
	if r.Status != StatusPass || r.Facts["mctrust_clusters_compared"] != 1 {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// Different trust domains: an alias in the caller's mesh accepts it,
// none does not.
func TestMultiClusterTrustDomains(t *testing.T) {
	shared := selfSignedRoot(t, 7, "mesh-root")
	r := runTrust(t, trustClusters(t,
		[]string{rootConfigMapDoc("shop", shared), meshConfigMapDoc("td1")},
		[]string{rootConfigMapDoc("shop", shared), meshConfigMapDoc("td2")}))
	if got := r.Facts["mctrust_domain_differs"].([]string); len(got) != 1 || got[0] != "ctx2: td2 (the caller's td1, aliases -)" {
		t.Fatalf("mctrust_domain_differs = %q", got)
	}
	r = runTrust(t, trustClusters(t,
		[]string{rootConfigMapDoc("shop", shared), meshConfigMapDoc("td1", "td2")},
		[]string{rootConfigMapDoc("shop", shared), meshConfigMapDoc("td2")}))
	if r.Status != StatusPass {
		t.Fatalf("aliased: %s %v", r.Summary, r.Facts)
	}
}

// A remote whose roots could not be read is unknown, not disjoint; one
// without a mesh config is unknown, not the default trust domain.
func TestMultiClusterTrustUnreadIsUnknown(t *testing.T) {
	r := runTrust(t, trustClusters(t,
		[]string{rootConfigMapDoc("shop", selfSignedRoot(t, 1, "cluster1")), meshConfigMapDoc("cluster.local")}, nil))
	if len(r.Facts["mctrust_roots_disjoint"].([]string)) != 0 || len(r.Facts["mctrust_domain_differs"].([]string)) != 0 ||
		len(r.Facts["mctrust_unknown"].([]string)) != 2 || r.Status != StatusWarn {
		t.Fatalf("status %s %v", r.Status, r.Facts)
	}
}
