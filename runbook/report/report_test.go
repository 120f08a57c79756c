package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/report"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
)

// checkRun is an unattended run on recorded facts: a wrong targetPort, and
// istiod unreachable so the proxy-status rules cannot decide.
func checkRun(t *testing.T, over map[string]probes.Facts, fail ...string) report.Report {
	t.Helper()
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	r := runbooktest.NewRecorded(runbooktest.With(runbooktest.Healthy(), over))
	r.Exact = true
	for i := 0; i+1 < len(fail); i += 2 {
		r.Fail(fail[i], probes.StatusError, fail[i+1])
	}
	s, err := runbook.NewSession(runbook.Config{
		Graph: g, Target: runbooktest.Target, Probes: probes.ByID(), Run: r.Run,
		Clock: runbooktest.NewClock().Now, Mode: runbook.ModeAuto, SessionID: "golden",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	return report.FromSession(s)
}

var portMismatch = map[string]probes.Facts{
	"endpoints": {"endpoints_port_mismatch": true, "endpoints_mismatched_ports": []string{"80->8081"}, "endpoints_declared_ports": []string{"80->8081 (the pods declare http=8080)"}},
	"access-log": {"log_503": 40, "log_5xx": 40, "log_flag_uf": 40, "log_2xx": 0, "log_connection_refused": 40,
		"log_transport_failures": []string{"delayed connect error: 111"}},
}

func TestGolden(t *testing.T) {
	cases := map[string]report.Report{
		"port-mismatch": checkRun(t, portMismatch, "proxy-status", "cannot GET /debug/syncz: istiod unreachable: connection refused"),
		"healthy":       checkRun(t, nil),
	}
	for name, rep := range cases {
		for _, format := range report.Formats {
			t.Run(name+"."+format, func(t *testing.T) {
				var b bytes.Buffer
				if err := report.Write(&b, rep, format); err != nil {
					t.Fatal(err)
				}
				golden.RequireEqual(t, b.Bytes())
			})
		}
	}
}

// The JSON is the contract scripts read: its shape is checked field by field,
// not only against a golden file someone may regenerate without reading.
func TestJSONContract(t *testing.T) {
	rep := checkRun(t, portMismatch, "proxy-status", "istiod unreachable")
	var b bytes.Buffer
	if err := report.JSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Target struct {
			Namespace, Service string
			Port               int
		} `json:"target"`
		Steps    []map[string]json.RawMessage `json:"steps"`
		Findings []struct {
			Cause      string            `json:"cause"`
			Confidence string            `json:"confidence"`
			Summary    string            `json:"summary"`
			Evidence   []json.RawMessage `json:"evidence"`
			Fix        struct {
				Directions []struct{ ID string } `json:"directions"`
			} `json:"fix"`
			Verify []json.RawMessage `json:"verify"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Target.Namespace != "shop" || doc.Target.Service != "web" || doc.Target.Port != 80 {
		t.Errorf("target = %+v", doc.Target)
	}
	if len(doc.Steps) == 0 {
		t.Fatal("no steps")
	}
	for _, st := range doc.Steps {
		for _, k := range []string{"id", "probe", "status", "summary", "facts", "duration_ms"} {
			if _, ok := st[k]; !ok {
				t.Errorf("step without %q: %v", k, st)
			}
		}
	}
	if len(doc.Findings) != 1 || doc.Findings[0].Cause != "service.port-mismatch" || doc.Findings[0].Confidence != "high" {
		t.Fatalf("findings = %+v", doc.Findings)
	}
	f := doc.Findings[0]
	if f.Summary == "" || len(f.Evidence) == 0 || len(f.Fix.Directions) == 0 || f.Fix.Directions[0].ID != "align-target-port" || len(f.Verify) == 0 {
		t.Errorf("finding incomplete: %+v", f)
	}
	if !strings.Contains(b.String(), `"skipped"`) || !strings.Contains(b.String(), "xds_stale_types unknown (proxy-status: error: istiod unreachable)") {
		t.Errorf("undecidable rules not reported")
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := report.Write(&bytes.Buffer{}, report.Report{}, "yaml"); err == nil {
		t.Fatal("yaml accepted")
	}
}
