package recorded_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
)

// TestScenariosDiagnose is the table test of the whole tool: every embedded
// scenario, run through the real probes and the embedded runbook in auto
// mode (what `meshtriage check` does), must be diagnosed to exactly the
// causes its scenario.yaml expects; the healthy one to none.
func TestScenariosDiagnose(t *testing.T) {
	graph, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := recorded.Load(assets.FS, name)
			if err != nil {
				t.Fatal(err)
			}
			c, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			sess, err := runbook.NewSession(runbook.Config{
				Graph: graph, Cluster: c, Target: s.Target, Probes: probes.ByID(), Mode: runbook.ModeAuto,
				Clock: func() time.Time { return time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC) },
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			findings, err := sess.Auto(ctx)
			if err != nil {
				t.Fatalf("auto triage: %v\n%s", err, explain(sess))
			}
			var got []string
			for _, f := range findings {
				got = append(got, f.Cause)
			}
			sort.Strings(got)
			want := slices.Clone(s.Expect)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("findings = %v, want %v\n%s", got, want, explain(sess))
			} else if testing.Verbose() {
				t.Logf("findings = %v\n%s", got, explain(sess))
			}
		})
	}
}

// explain is what a mismatch needs to be judged: which finding fired on
// which facts, and every probe's outcome.
func explain(sess *runbook.Session) string {
	var b strings.Builder
	for _, f := range sess.Findings() {
		fmt.Fprintf(&b, "finding %s:\n", f.Cause)
		for _, ev := range f.Evidence {
			fmt.Fprintf(&b, "  step %s when %s facts %v\n", ev.Step, ev.When, ev.Facts)
		}
	}
	for _, st := range sess.Steps() {
		r, ok := sess.Result(st.ID)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "%-18s %-8s %s\n", r.Probe, r.Status, r.Summary)
	}
	facts := sess.Facts()
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s=%v\n", k, facts[k])
	}
	for _, sk := range sess.Skipped() {
		fmt.Fprintf(&b, "skipped at %s: %s (%s)\n", sk.Step, sk.When, sk.Why)
	}
	return b.String()
}
