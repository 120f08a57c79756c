//go:build integration

package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Least privilege across clusters (issue 30): the read-only ClusterRole
// meshtriage ships, bound in each cluster, is all a triage with
// --remote-contexts needs there. The two clusters of
// TestEastWestPassthroughAcrossContexts are read through a kubeconfig
// whose contexts authenticate as the role's ServiceAccount: every step
// of check runs without a refusal, the remote cluster is read (not
// named unread), and each API server's audit log holds only reads by
// that user, none refused.
func TestReadOnlyRoleSufficesInEachCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c1, c2, _ := eastWestPair(ctx, t)
	tokens := map[*Lab]string{}
	var sa rbacv1.Subject
	for _, l := range []*Lab{c1, c2} {
		sa, tokens[l] = grantReadOnly(ctx, t, l)
	}
	args := twoContextKubeconfigAs(t, c1, c2, tokens[c1], tokens[c2])

	_, steps := checkTwoClusters(t, args...)
	for _, probe := range []string{"multicluster", "eastwest-passthrough", "multicluster-trust"} {
		if _, ok := steps[probe]; !ok {
			t.Errorf("no %s step: the walk did not reach the multi-cluster steps", probe)
		}
	}
	for probe, s := range steps {
		if strings.Contains(strings.ToLower(s.Summary), "forbidden") {
			t.Errorf("step %s with the read-only role: %s", probe, s.Summary)
		}
	}
	mc := steps["multicluster"]
	if mc.Facts["mc_remotes_given"] != true || len(mc.list("mc_remotes_unread")) != 0 {
		t.Errorf("multicluster step: remotes given %v, unread %q (%s)", mc.Facts["mc_remotes_given"], mc.list("mc_remotes_unread"), mc.Summary)
	}

	user := ServiceAccountUser(sa.Namespace, sa.Name)
	for name, l := range map[string]*Lab{"c1": c1, "c2": c2} {
		events, err := ReadAudit(l.AuditLog)
		if err != nil {
			t.Fatal(err)
		}
		requests := 0
		for _, e := range events {
			if e.User.Username != user || e.Stage != "ResponseComplete" && e.Stage != "Panic" {
				continue
			}
			requests++
			if !readOnlyVerb(e) {
				t.Errorf("%s audit: %s %s (%s) by the read-only user", name, e.Verb, e.Resource(), e.RequestURI)
			}
			if e.Code() == 403 {
				t.Errorf("%s audit: forbidden %s %s (%s): the role lacks a permission a multi-cluster probe uses", name, e.Verb, e.Resource(), e.RequestURI)
			}
		}
		if requests == 0 {
			t.Errorf("%s audit: no request by %s: the cluster was not read through the role", name, user)
		}
	}
}
