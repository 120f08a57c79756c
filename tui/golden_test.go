package tui

import (
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/meshtriage/meshtriage/tui/enginetest"
)

// walkToEnvoy answers the symptom and runs the first three steps, leaving
// the cursor on the failing Envoy step.
func walkToEnvoy(h *harness) {
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service and selected pods")
	h.key("enter")
	h.waitFor("next: Kubernetes endpoints")
	h.key("enter")
	h.waitFor("next: Envoy upstream hosts")
	h.key("enter")
	h.waitFor("0/3 hosts healthy: 3 failed_outlier_check", "next: DestinationRule traffic policy")
}

// walkToCause runs the guided path until the engine reaches the cause.
func walkToCause(h *harness) {
	walkToEnvoy(h)
	h.key("enter")
	h.waitFor("cause reached: outlier.all-ejected")
}

// TestScreens pins the main screens at 80x24, no colour, as the on-call
// sees them. Regenerate with: go test ./tui -run TestScreens -update
func TestScreens(t *testing.T) {
	cases := []struct {
		name string
		w, h int
		walk func(h *harness)
	}{
		{"symptom", 80, 24, func(h *harness) { h.waitFor("What are the callers seeing?") }},
		{"checklist_detail", 80, 24, walkToEnvoy},
		{"cause_reached", 80, 24, walkToCause},
		{"cause", 80, 24, func(h *harness) {
			walkToCause(h)
			h.key("enter")
			h.waitFor("1 fix direction · 2 verification steps below")
		}},
		{"cause_fix_selected", 80, 24, func(h *harness) {
			walkToCause(h)
			h.key("enter")
			h.waitFor("1 fix direction")
			h.key("tab")
			h.waitFor("YAML  (y copies)", "consecutive5xxErrors: 5")
		}},
		{"cause_verified", 80, 24, func(h *harness) {
			walkToCause(h)
			h.key("enter")
			h.waitFor("1 fix direction")
			h.key("v")
			h.waitFor("verification: 1 passed, 0 failed, 1 to check by hand")
			h.key("G")
		}},
		{"help", 80, 24, func(h *harness) {
			walkToEnvoy(h)
			h.key("?")
			h.waitFor("Keys · checklist")
		}},
		{"free_mode", 80, 24, func(h *harness) {
			walkToCause(h)
			h.key("m")
			h.waitFor("Runbook · free")
		}},
		{"note", 80, 24, func(h *harness) {
			walkToEnvoy(h)
			h.key("n")
			h.waitFor("Note for the incident log")
			h.key("all 3 hosts ejected; DR changed at 02:55")
			h.waitFor("DR changed at 02:55")
		}},
		{"quit", 80, 24, func(h *harness) {
			walkToEnvoy(h)
			h.key("q")
			h.waitFor("Quit meshtriage?")
		}},
		{"wide", 120, 30, walkToEnvoy},
		{"too_small", 30, 8, func(h *harness) { h.waitFor("needs at least") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := start(t, enginetest.New(outlierScript()), c.w, c.h, Options{})
			c.walk(h)
			golden.RequireEqual(t, h.quiet())
		})
	}
}

// TestPickerScreen pins the target picker's service list.
func TestPickerScreen(t *testing.T) {
	h := startPicker(t, fakeCatalog(), 80, 24, Options{Namespace: "shop"})
	h.waitFor("reviews", "3 pods · 3/3 with sidecar")
	golden.RequireEqual(t, h.quiet())
}
