package common

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestNoColorStylesCarryNoColour(t *testing.T) {
	colour, plain := NewStyles(true, false), NewStyles(true, true)
	if out := colour.Fail.Render("✗"); !strings.Contains(out, "38;") {
		t.Fatalf("colour styles render no foreground colour: %q", out)
	}
	for name, out := range map[string]string{
		"fail":     plain.Fail.Render("✗"),
		"selected": plain.Selected.Render("row"),
		"status":   plain.StatusBar.Render("bar"),
		"code":     plain.Code.Render("kubectl"),
	} {
		if strings.Contains(out, "38;") || strings.Contains(out, "48;") {
			t.Errorf("NO_COLOR %s style emits a colour: %q", name, out)
		}
	}
	// Selection must still be visible without colour.
	if out := plain.Selected.Render("row"); out == "row" {
		t.Error("NO_COLOR selection is invisible")
	}
}

func TestLightAndDarkDiffer(t *testing.T) {
	if DefaultStyles(true).Pass.Render("x") == DefaultStyles(false).Pass.Render("x") {
		t.Error("light and dark backgrounds get the same colours")
	}
}

func TestFitLines(t *testing.T) {
	got := FitLines("a\nlong line here\nc\nd", 6, 3)
	want := "a\nlong …\nc"
	if got != want {
		t.Fatalf("FitLines = %q, want %q", got, want)
	}
	if got := FitLines("x", 3, 2); got != "x\n" {
		t.Fatalf("FitLines pads to %q", got)
	}
}

func TestTruncateMiddle(t *testing.T) {
	if got := TruncateMiddle("/var/tmp/meshtriage/2025.jsonl", 12); got != "/var/…5.jsonl" && ansi.StringWidth(got) != 12 {
		t.Fatalf("TruncateMiddle = %q", got)
	}
	if got := TruncateMiddle("short", 12); got != "short" {
		t.Fatalf("TruncateMiddle = %q", got)
	}
}

func TestTableFitsOrBecomesRecords(t *testing.T) {
	s := NewStyles(true, true)
	cols := []string{"HOST", "HEALTH", "RQ"}
	rows := [][]string{{"10.244.1.17:9080", "failed_outlier_check", "41"}}
	wide := ansi.Strip(Table(s, cols, rows, 60))
	if !strings.Contains(wide, "10.244.1.17:9080  failed_outlier_check  41") {
		t.Fatalf("wide table:\n%s", wide)
	}
	narrow := ansi.Strip(Table(s, cols, rows, 24))
	for _, l := range strings.Split(narrow, "\n") {
		if ansi.StringWidth(l) > 24 {
			t.Fatalf("narrow table overflows: %q", l)
		}
	}
	// Too narrow for columns: each row becomes a record, nothing lost.
	if !strings.Contains(narrow, "10.244.1.17:9080") || !strings.Contains(narrow, "failed_outlier_check") || !strings.Contains(narrow, "RQ 41") {
		t.Fatalf("narrow table lost data:\n%s", narrow)
	}
}

func TestHang(t *testing.T) {
	got := Hang("one two three four", 10, "  • ")
	want := "  • one\n    two\n    three\n    four"
	if got != want {
		t.Fatalf("Hang = %q, want %q", got, want)
	}
}

// The key column is what a row is about: the other columns give way before
// it, and a table that cannot keep it whole becomes records. At 120
// columns the detail pane gives a table 68 cells.
func TestTableNeverCutsTheKeyColumn(t *testing.T) {
	s := NewStyles(true, true)
	const width = 68
	cases := map[string]struct {
		cols []string
		rows [][]string
	}{
		"destination-rule subsets": {
			[]string{"subset", "selector", "pods", "routed"},
			[][]string{
				{"subset v2 selector version=v2 (DestinationRule shop/orders)", "version=v2", "0", "10% of route 0 (VirtualService shop/orders)"},
				{"subset v1 selector version=v1 (DestinationRule shop/orders)", "version=v1", "3", "90% of route 0 (VirtualService shop/orders)"},
			},
		},
		"ambient pods": {
			[]string{"pod", "role", "data plane", "node", "ip"},
			[][]string{
				{"shop/orders-6d8f7c9b5-2kq8v", "target", "ambient (enrolled: namespace label istio.io/dataplane-mode=ambient)", "worker-b", "10.244.1.17"},
				{"shop/orders-6d8f7c9b5-7xw4n", "target", "ambient (enrolled: namespace label istio.io/dataplane-mode=ambient)", "worker-c", "10.244.2.18"},
				{"shop/orders-6d8f7c9b5-m9p2d", "target", "ambient (enrolled: namespace label istio.io/dataplane-mode=ambient)", "worker-a", "10.244.0.21"},
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out := ansi.Strip(Table(s, c.cols, c.rows, width))
			for _, l := range strings.Split(out, "\n") {
				if ansi.StringWidth(l) > width {
					t.Errorf("line overflows %d: %q", width, l)
				}
			}
			for _, r := range c.rows {
				if !strings.Contains(out, r[0]) {
					t.Errorf("key %q cut:\n%s", r[0], out)
				}
			}
		})
	}
}

func TestWrapCommandBreaksBetweenShellWordsOnly(t *testing.T) {
	cmd := `kubectl logs -n shop orders-6d8f7c9b5-2kq8v -c istio-proxy --since=30m --prefix | grep 'inbound|' | grep ' 503 '   # pod a`
	got := WrapCommand(cmd, 30, "$ ", "    ")
	want := "$ kubectl logs -n shop \\\n" +
		"    orders-6d8f7c9b5-2kq8v \\\n" +
		"    -c istio-proxy \\\n" +
		"    --since=30m --prefix | \\\n" +
		"    grep 'inbound|' | grep \\\n" +
		"    ' 503 '   # pod a"
	if got != want {
		t.Fatalf("WrapCommand =\n%s\nwant\n%s", got, want)
	}
	for _, l := range strings.Split(got, "\n") {
		if ansi.StringWidth(l) > 30 {
			t.Errorf("line %q is wider than 30", l)
		}
	}
	// A word wider than the pane stands alone, whole.
	long := `'istio_requests_total{.*destination_service="orders.shop.svc.cluster.local"'`
	got = WrapCommand("kubectl exec x -- grep "+long, 40, "$ ", "    ")
	if !strings.Contains(got, "\n    "+long) {
		t.Fatalf("the long word is cut:\n%s", got)
	}
	// A heredoc's lines stay as they are, with no continuation.
	doc := "kubectl apply -f - <<'EOF'\nkind: PeerAuthentication\nEOF"
	if got := WrapCommand(doc, 80, "$ ", "  "); got != "$ kubectl apply -f - <<'EOF'\n  kind: PeerAuthentication\n  EOF" {
		t.Fatalf("heredoc = %q", got)
	}
}

func TestShellWords(t *testing.T) {
	var got []string
	for _, w := range ShellWords(`a 'b c' "d \" e" f\ g h#i # j k`) {
		got = append(got, w.Text)
	}
	want := []string{"a", "'b c'", `"d \" e"`, `f\ g`, "h#i", "# j k"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ShellWords = %q, want %q", got, want)
	}
}
