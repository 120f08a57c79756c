package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/meshtriage/meshtriage/tui/enginetest"
)

// y on a fix's patch copies the kubectl command that applies it, and
// copying it chooses the fix: the incident log records which fix the
// on-call took.
func TestCopyingAPatchChoosesItsFix(t *testing.T) {
	script := outlierScript()
	cmd := `kubectl patch destinationrule.networking.istio.io reviews -n shop --type=merge -p '{"spec":{"trafficPolicy":{"outlierDetection":{"consecutive5xxErrors":5}}}}'`
	fix := &script.Causes[0].Fixes[0]
	fix.YAML, fix.Patches = nil, []string{cmd}
	fix.Simulation = "simulated: outlier.all-ejected rests on runtime evidence; on the patched configuration `!dr_outlier_aggressive` holds, no new finding"
	eng := enginetest.New(script)
	h := start(t, eng, 80, 24, Options{})
	walkToCause(h)
	h.key("enter")
	h.waitFor("Outlier detection ejected every host")
	h.key("tab")
	h.waitFor("patch  (y copies)")
	h.key("y")
	// The copy's notice gives way to the record of the choice.
	h.waitFor(`fix "relax-outlier" chosen for outlier.all-ejected`)
	h.waitCall("fix", "outlier.all-ejected", "relax-outlier")

	h.key("q")
	h.waitFor("Quit meshtriage?")
	h.key("y")
	fm := h.tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*frames).m
	if farewell := fm.Farewell(); !strings.Contains(farewell, cmd) {
		t.Errorf("the copied patch is not printed on quit as it was copied:\n%s", farewell)
	}
}
