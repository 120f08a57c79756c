package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook/report"
)

// A caller search whose most likely caller is in a remote cluster: the
// text and Markdown reports say it first, that it was not read, and the
// check that triages from its side, beside the current-cluster caller
// that was read.
func TestReportSaysTheRemoteCallerWasNotRead(t *testing.T) {
	const cmd = "meshtriage check --context c2 --remote-contexts c1 -n shop svc/orders --from shop/pod/web-7d9c-2"
	search := callersearch.Result{
		Callers:     []callersearch.Caller{{Pod: cluster.PodRef{Namespace: "shop", Name: "web-7d9c-1"}, Workload: "shop/web", By: callersearch.ByConfig, Why: "meshed pod in shop"}},
		Remote:      []callersearch.Caller{{Pod: cluster.PodRef{Namespace: "shop", Name: "web-7d9c-2"}, Context: "c2", Workload: "shop/web", By: callersearch.ByInboundLog, Why: "2 failed of 2 requests", Triage: cmd}},
		RemoteFirst: true,
		Searched:    []string{"the inbound access log of 1 target pod(s)", "cluster c2: the inbound access log of 1 target pod(s)"},
	}
	r := report.Report{Target: cluster.Target{Namespace: "shop", Service: "orders"}, CallerSearch: &search}
	for _, format := range []string{"text", "md"} {
		var b bytes.Buffer
		if err := report.Write(&b, r, format); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "the most likely caller, c2: shop/web-7d9c-2 (2 failed of 2 requests), is in cluster c2") || !strings.Contains(out, "so it was not read") || !strings.Contains(out, cmd) {
			t.Errorf("%s report does not say the remote caller and the command from its side:\n%s", format, out)
		}
		if !strings.Contains(out, "shop/web-7d9c-1") {
			t.Errorf("%s report does not name the caller read:\n%s", format, out)
		}
	}
}
