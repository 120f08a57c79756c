package tui

import (
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/tui/enginetest"
)

// At 80x24 a long kube context gives way before the target does: the
// on-call must see what is being triaged.
func TestHeaderKeepsTheTargetAt80x24(t *testing.T) {
	h := start(t, enginetest.New(outlierScript()), 80, 24, Options{Context: "gke_acme-prod-platform-7731_europe-west1-b_prod-cluster-01-blue"})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	s := h.waitFor("next: Service and selected pods")
	header := strings.SplitN(s, "\n", 2)[0]
	if !strings.Contains(header, "reviews.shop:9080 ← productpage-7d4f9-abcde") {
		t.Errorf("header cuts the target: %q", header)
	}
	if !strings.Contains(header, "gke_") {
		t.Errorf("header lost the context altogether: %q", header)
	}
}

// At 60x20 the footer keeps "? help • q quit": the way out and the way to
// every other key stay in view, and other keys give way.
func TestFooterKeepsHelpAndQuitAt60x20(t *testing.T) {
	h := start(t, enginetest.New(outlierScript()), 60, 20, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	s := h.waitFor("next: Service and selected pods")
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	footer := strings.TrimRight(lines[len(lines)-1], " ")
	if !strings.HasSuffix(footer, "? help • q quit") {
		t.Errorf("footer %q does not end with ? help • q quit", footer)
	}
	if strings.Contains(footer, "…") {
		t.Errorf("footer cut mid-key: %q", footer)
	}
}
