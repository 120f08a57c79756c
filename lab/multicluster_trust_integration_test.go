//go:build integration

package lab

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	networkingv1 "istio.io/api/networking/v1"
	networkingclientv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two clusters of TestEastWestPassthroughAcrossContexts, the east-west
// gateway forwarding by SNI, each cluster with the root its own istiod
// would make (no shared cacerts) in istio-ca-root-cert: check
// --remote-contexts c2 reaches multicluster.trust-mismatch (high) from
// the roots alone; once c2's bundle also holds c1's root, as during a
// move to a shared root, it does not.
func TestMultiClusterTrustAcrossContexts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c1, c2, args := eastWestPair(ctx, t)
	ic, err := istioclient.NewForConfig(c1.Config)
	if err != nil {
		t.Fatal(err)
	}
	gw := &networkingclientv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "cross-network-gateway", Namespace: "istio-system"},
		Spec: networkingv1.Gateway{Selector: map[string]string{"istio": "eastwestgateway"},
			Servers: []*networkingv1.Server{{Port: &networkingv1.Port{Number: 15443, Name: "tls", Protocol: "TLS"},
				Tls: &networkingv1.ServerTLSSettings{Mode: networkingv1.ServerTLSSettings_AUTO_PASSTHROUGH}, Hosts: []string{"*.local"}}}},
	}
	if _, err := ic.NetworkingV1().Gateways(gw.Namespace).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root1, root2 := labRoot(t, 1, "cluster1"), labRoot(t, 2, "cluster2")
	setRoots := func(l *Lab, bundle string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio-ca-root-cert", Namespace: "shop"}, Data: map[string]string{"root-cert.pem": bundle}}
		cms := l.Kube.CoreV1().ConfigMaps("shop")
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		mesh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: "istio-system"}, Data: map[string]string{"mesh": "trustDomain: cluster.local\n"}}
		if _, err := l.Kube.CoreV1().ConfigMaps("istio-system").Create(ctx, mesh, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	setRoots(c1, root1)
	setRoots(c2, root2)

	step := checkStep(t, "multicluster-trust", args...)
	if got := step.list("mctrust_roots_disjoint"); len(got) != 1 || !strings.HasPrefix(got[0], "c2: shop/istio-ca-root-cert roots") {
		t.Fatalf("own roots: %s %s, mctrust_roots_disjoint = %q", step.Status, step.Summary, got)
	}
	out, _, _ := runMeshtriage(t, args...)
	if !strings.Contains(string(out), `"cause": "multicluster.trust-mismatch"`) && !strings.Contains(string(out), `"cause":"multicluster.trust-mismatch"`) {
		t.Errorf("no multicluster.trust-mismatch finding:\n%s", out)
	}

	setRoots(c2, root2+root1)
	step = checkStep(t, "multicluster-trust", args...)
	if step.Status != "pass" || step.Facts["mctrust_clusters_compared"] != float64(1) {
		t.Errorf("a root in common: %s %s %v", step.Status, step.Summary, step.Facts)
	}
}

// labRoot is a self-signed CA certificate, as an istiod without cacerts
// makes for its cluster.
func labRoot(t *testing.T, serial int64, org string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{Organization: []string{org}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
