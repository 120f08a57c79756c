//go:build integration

package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/runbook/triage"
)

// The shipped ClusterRole is enough for a whole check of every scenario, and
// the audit log proves the check changed nothing and was refused nothing:
// its only non-read verb is the create of pods/portforward that opens a
// stream, and it runs nothing in a pod (no pods/exec).
func TestReadOnlyRoleSufficesAndWritesNothing(t *testing.T) {
	l := sharedLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sa, token := grantReadOnly(ctx, t, l)
	kubeconfig := filepath.Join(t.TempDir(), "readonly.kubeconfig")
	if err := l.WriteKubeconfig(kubeconfig, sa.Name, token, "default"); err != nil {
		t.Fatal(err)
	}

	// triages counts the scenarios run: a -run filter runs some of them.
	triages := 0
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			triages++
			s := loadScenario(t, name)
			applyShared(t, l, s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			run := runCheck(t, ctx, triage.LiveSource(liveCluster(t, kubeconfig, s, 20*time.Second)), s.Target)
			for id, r := range run.results {
				if strings.Contains(strings.ToLower(r.Summary), "forbidden") {
					t.Errorf("probe %s with the read-only role: %s", id, r.Summary)
				}
			}
		})
	}

	user := ServiceAccountUser(sa.Namespace, sa.Name)
	events, err := ReadAudit(l.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	meshWide := map[string]int{}
	for _, e := range events {
		if e.User.Username != user || e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			continue
		}
		if e.Verb == "list" && e.ObjectRef != nil && e.ObjectRef.Namespace == "" && ruleLists[e.Resource()] {
			meshWide[e.Resource()]++
		}
		what := e.Verb + " " + e.Resource()
		used[fmt.Sprintf("%s -> %d", what, e.Code())]++
		if !readOnlyVerb(e) {
			t.Errorf("audit: %s %s (%s) by the read-only user", e.Verb, e.Resource(), e.RequestURI)
		}
		// The role grants "get" on pods/portforward, the verb a WebSocket
		// port-forward is authorised as before Kubernetes 1.35: not even
		// the first upgrade attempt is refused.
		if e.Code() == 403 {
			t.Errorf("audit: forbidden %s %s (%s): the role lacks a permission a probe uses", e.Verb, e.Resource(), e.RequestURI)
		}
	}
	if len(used) == 0 {
		t.Fatalf("the audit log has no request by %s", user)
	}
	// The rules are read as istiod reads them: one list a kind across all
	// namespaces, once a triage (the read cache shares it among probes).
	for kind := range ruleLists {
		if meshWide[kind] != triages {
			t.Errorf("%s listed across all namespaces %d times in %d triages, want once each", kind, meshWide[kind], triages)
		}
	}
	var lines []string
	for k, n := range used {
		lines = append(lines, fmt.Sprintf("%5d  %s", n, k))
	}
	sort.Strings(lines)
	t.Logf("requests by %s:\n%s", user, strings.Join(lines, "\n"))
}

// readOnlyVerb: reads, and the create that opens a port-forward stream
// (which changes nothing in the cluster). An exec is not a read: the
// read-only role does not grant it.
func readOnlyVerb(e AuditEvent) bool {
	switch e.Verb {
	case "get", "list", "watch":
		return !(e.ObjectRef != nil && e.ObjectRef.Subresource == "exec")
	case "create":
		return e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.ObjectRef.APIGroup == "" &&
			e.ObjectRef.Subresource == "portforward"
	}
	return false
}
