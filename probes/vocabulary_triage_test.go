package probes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

// A triage that sees a flag no cause of the catalogue produces (504 UT at
// the caller's sidecar) ends in an unexplained finding that names the flag
// and the hop, not in "no finding".
func TestTriageOfAnUnexplainedFlagSaysSo(t *testing.T) {
	graph, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	c, target := probes.UnexplainedFlagWorld(t)
	sess, err := runbook.NewSession(runbook.Config{Graph: graph, Cluster: c, Target: target, Probes: probes.ByID(), Mode: runbook.ModeAuto,
		Clock: func() time.Time { return time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	findings, err := sess.Auto(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range findings {
		if f.Cause == runbook.Unexplained && f.Step == "access-log" && strings.Contains(f.Summary, "UT 504") && strings.Contains(f.Summary, "the caller's sidecar (outbound)") {
			found = true
		}
	}
	if !found {
		for _, f := range findings {
			t.Logf("finding %s %s: %s", f.Cause, f.Step, f.Summary)
		}
		t.Error("no unexplained finding naming UT 504 at the caller's sidecar")
	}
}
