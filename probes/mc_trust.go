package probes

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// MultiClusterTrustProbe compares the trust of the caller's cluster with
// that of every remote cluster holding endpoints of the target: the
// roots istiod publishes to each namespace (ConfigMap istio-ca-root-cert,
// root-cert.pem: the roots a proxy of that namespace verifies its peers
// against) in the caller's namespace and in the target's namespace
// there, as sets of certificates (a bundle may hold several roots during
// a rotation), and each cluster's trust domain (its istio ConfigMap's
// meshConfig.trustDomain, default cluster.local) against the caller's
// and its trustDomainAliases. Disjoint roots fail every cross-cluster
// handshake (CERTIFICATE_VERIFY_FAILED, or TLSV1_ALERT_UNKNOWN_CA); a
// trust domain the caller's mesh neither is nor aliases works only while
// the SANs istiod builds match the certificates, and breaks
// AuthorizationPolicy principals.
type MultiClusterTrustProbe struct{}

// defaultTrustDomain is meshConfig.trustDomain's default.
const defaultTrustDomain = "cluster.local"

// rootCertConfigMap is what istiod's namespace controller writes in every
// namespace: its root certificates, under root-cert.pem.
const (
	rootCertConfigMap = "istio-ca-root-cert"
	rootCertKey       = "root-cert.pem"
)

func (MultiClusterTrustProbe) Meta() Meta {
	return Meta{
		ID:    "multicluster-trust",
		Title: "The caller's cluster and the remote clusters of the Service share a root and a trust domain",
		Reads: []string{"configmaps istio-ca-root-cert (the caller's namespace; the target's in each remote cluster with endpoints)", "configmaps istio (each cluster's control plane: trustDomain, trustDomainAliases)"},
		Facts: []FactSpec{
			{"mctrust_clusters_compared", FactInt, "remote clusters with endpoints of the Service whose roots were compared with the caller's"},
			{"mctrust_roots_disjoint", FactList, "remote clusters whose roots share no certificate with the caller's, as CONTEXT: NS/istio-ca-root-cert roots vs the caller's"},
			{"mctrust_domain_differs", FactList, "remote clusters whose trust domain is not the caller's nor among its trustDomainAliases, as CONTEXT: TD (caller's TD, aliases)"},
			{"mctrust_unknown", FactList, "what could not be compared, with why (never taken as a match or a mismatch)"},
		},
	}
}

// trustRead is one cluster's trust as read.
type trustRead struct {
	Context   string
	Namespace string // of the roots read
	// Roots are root-cert.pem's certificates; RootsUnknown says why not read.
	Roots        []*x509.Certificate
	RootsUnknown string
	// TrustDomain and Aliases from the istio ConfigMap; DomainUnknown
	// says why not read.
	TrustDomain   string
	Aliases       []string
	DomainUnknown string
}

func (MultiClusterTrustProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	remotes, unread := cluster.RemoteClusters(c)
	if unread != "" {
		return skippedResult(unread, nil)
	}
	callerNS := t.Namespace
	if t.Source != nil {
		callerNS = t.Source.Namespace
	}
	in := callerview.ReadClusters(ctx, c, t)
	local := readTrust(ctx, c, in.Reads[0].Context, callerNS)
	var others []trustRead
	for _, cr := range in.Reads {
		if cr.Local || cr.SlicesUnknown != "" || !hasEndpoints(cr) {
			continue
		}
		for _, r := range remotes {
			if r.Context == cr.Context {
				others = append(others, readTrust(ctx, r.Cluster, r.Context, t.Namespace))
			}
		}
	}
	return evaluateMultiClusterTrust(local, others)
}

func hasEndpoints(cr mesh.ClusterRead) bool {
	for _, s := range cr.Slices {
		for _, e := range s.Endpoints {
			if len(e.Addresses) > 0 {
				return true
			}
		}
	}
	return false
}

func readTrust(ctx context.Context, c cluster.Cluster, contextName, ns string) trustRead {
	out := trustRead{Context: contextName, Namespace: ns}
	cm, err := c.GetConfigMap(ctx, ns, rootCertConfigMap)
	switch {
	case err != nil:
		out.RootsUnknown = cluster.AccessProblem("get configmap "+ns+"/"+rootCertConfigMap+" in "+contextName, err)
	default:
		out.Roots, out.RootsUnknown = parseRootBundle(cm.Data[rootCertKey])
		if out.RootsUnknown != "" {
			out.RootsUnknown = ns + "/" + rootCertConfigMap + " in " + contextName + ": " + out.RootsUnknown
		}
	}
	m, err := istioconfig.ReadMeshConfig(ctx, c)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		out.DomainUnknown = cluster.AccessProblem("read the mesh config of "+contextName, err)
	case !m.Found:
		out.DomainUnknown = "no istio ConfigMap in " + contextName + "'s control-plane namespace"
	default:
		out.TrustDomain = m.Raw.GetTrustDomain()
		if out.TrustDomain == "" {
			out.TrustDomain = defaultTrustDomain
		}
		out.Aliases = m.Raw.GetTrustDomainAliases()
	}
	return out
}

// parseRootBundle reads a PEM bundle's certificates; why says why it has
// none that parse.
func parseRootBundle(text string) ([]*x509.Certificate, string) {
	var out []*x509.Certificate
	rest := []byte(text)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, "a certificate of " + rootCertKey + " does not parse: " + err.Error()
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, "no certificate under " + rootCertKey
	}
	return out, ""
}

func evaluateMultiClusterTrust(local trustRead, others []trustRead) Result {
	r := Result{Facts: Facts{}}
	r.Evidence.Columns = []string{"CLUSTER", "ROOTS (" + rootCertConfigMap + ")", "TRUST DOMAIN", "WITH THE CALLER'S"}
	r.Evidence.Rows = append(r.Evidence.Rows, []string{local.Context + " (caller, " + local.Namespace + ")", describeRoots(local), describeDomain(local), "-"})
	var disjoint, differs, unknown []string
	if local.RootsUnknown != "" {
		unknown = append(unknown, local.RootsUnknown)
	}
	if local.DomainUnknown != "" {
		unknown = append(unknown, local.DomainUnknown)
	}
	compared := 0
	for _, o := range others {
		var verdicts []string
		switch {
		case o.RootsUnknown != "":
			unknown = append(unknown, o.RootsUnknown)
		case local.RootsUnknown == "":
			compared++
			if !sharesCertificate(local.Roots, o.Roots) {
				disjoint = append(disjoint, fmt.Sprintf("%s: %s/%s roots %s share none with the caller's %s", o.Context, o.Namespace, rootCertConfigMap, describeRoots(o), describeRoots(local)))
				verdicts = append(verdicts, "no root in common")
			} else {
				verdicts = append(verdicts, "a root in common")
			}
		}
		switch {
		case o.DomainUnknown != "":
			unknown = append(unknown, o.DomainUnknown)
		case local.DomainUnknown == "":
			if o.TrustDomain != local.TrustDomain && !slices.Contains(local.Aliases, o.TrustDomain) {
				differs = append(differs, fmt.Sprintf("%s: %s (the caller's %s, aliases %s)", o.Context, o.TrustDomain, local.TrustDomain, wording.Dash(strings.Join(local.Aliases, ", "))))
				verdicts = append(verdicts, "trust domain neither the caller's nor aliased")
			}
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{o.Context + " (" + o.Namespace + ")", describeRoots(o), describeDomain(o), wording.Dash(strings.Join(verdicts, "; "))})
	}
	r.Facts["mctrust_clusters_compared"] = compared
	r.Facts["mctrust_roots_disjoint"] = nonNil(disjoint)
	r.Facts["mctrust_domain_differs"] = nonNil(differs)
	r.Facts["mctrust_unknown"] = nonNil(unknown)
	r.Commands = []string{"kubectl get configmap " + rootCertConfigMap + " -n " + local.Namespace + " -o jsonpath='{.data.root-cert\\.pem}' | openssl x509 -noout -subject -serial"}
	for _, o := range others {
		r.Commands = append(r.Commands, "kubectl get configmap "+rootCertConfigMap+" --context "+o.Context+" -n "+o.Namespace+" -o jsonpath='{.data.root-cert\\.pem}' | openssl x509 -noout -subject -serial")
	}
	if len(others) == 0 {
		return Result{Status: StatusPass, Summary: "no remote cluster read holds endpoints of the Service", Facts: r.Facts}
	}
	v := verdict{Head: wording.CountNoun(len(others), "remote cluster") + " with endpoints"}
	v.Problems = append(v.Problems, disjoint...)
	v.Problems = append(v.Problems, differs...)
	v.Warnings = append(v.Warnings, unknown...)
	r.Status, r.Summary = v.judge()
	return r
}

func sharesCertificate(a, b []*x509.Certificate) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Equal(y) {
				return true
			}
		}
	}
	return false
}

func describeRoots(t trustRead) string {
	if t.RootsUnknown != "" {
		return "not read"
	}
	var out []string
	for _, c := range t.Roots {
		out = append(out, fmt.Sprintf("%q serial %s", c.Subject.String(), c.SerialNumber.Text(16)))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func describeDomain(t trustRead) string {
	if t.DomainUnknown != "" {
		return "not read"
	}
	if len(t.Aliases) == 0 {
		return t.TrustDomain
	}
	return t.TrustDomain + " (aliases " + strings.Join(t.Aliases, ", ") + ")"
}
