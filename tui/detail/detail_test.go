package detail

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// The pane lays its text out for its width itself (it no longer hard-wraps
// what it is given, which cut commands' words): every line fits, but for
// a command's word wider than the pane, which stands alone on its line.
func TestEveryLineFitsButALongCommandWord(t *testing.T) {
	s := common.NewStyles(true, true)
	const width = 30
	long := "'istio_requests_total{.*destination_service=\"orders.shop.svc.cluster.local\"'"
	step := engine.Step{ID: "metrics", Title: "Current 503 rate from the sidecar's metrics", Probe: "metrics-with-a-long-probe-name",
		Tell: "Two samples of the counters a window apart."}
	res := probes.Result{Status: probes.StatusError, Summary: "cannot read /stats/prometheus of shop/orders-6d8f7c9b5-2kq8v",
		Facts:    probes.Facts{"metrics_503_by_flag": []string{"UO=12", "UH=3"}},
		Commands: []string{"kubectl exec -n shop orders-6d8f7c9b5-2kq8v -c istio-proxy -- pilot-agent request GET stats/prometheus | grep " + long}}
	cause := engine.Cause{ID: "circuit-breaker.overflow", Title: "Connection pool limits are hit", Summary: "The pool caps what the caller sends."}
	u := engine.Undecided{Cause: cause.ID, Title: cause.Title, Confidence: "high", Unknown: []string{"metrics_503_by_flag"},
		Why: "metrics_503_by_flag unknown (metrics: error)", Settle: res.Commands}
	f := &engine.Finding{Cause: cause.ID, Confidence: "medium", Summary: "UO in the caller's counters"}
	for name, pane := range map[string]string{
		"step":       RenderStep(s, width, step, res, StepState{Ran: true}),
		"hypothesis": RenderUndecided(s, width, cause, u, engine.RuledOut),
		"cause":      RenderCause(s, width, cause, f, engine.Confirmed),
	} {
		for _, line := range strings.Split(ansi.Strip(pane), "\n") {
			if ansi.StringWidth(line) <= width {
				continue
			}
			if words := common.ShellWords(strings.TrimSpace(strings.TrimSuffix(line, " \\"))); len(words) == 1 && words[0].Text == long {
				continue
			}
			t.Errorf("%s: line wider than %d: %q", name, width, line)
		}
	}
}
