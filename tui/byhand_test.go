package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/enginetest"
)

// Commands as the probes give them: an exec into istio-proxy, a log read
// with a quoted pattern and a comment, a FQDN.
var byHand = []string{
	"kubectl exec -n shop orders-6d8f7c9b5-2kq8v -c istio-proxy -- pilot-agent request GET stats/prometheus | grep 'istio_requests_total{.*destination_service=\"orders.shop.svc.cluster.local\"'",
	"kubectl logs -n istio-system ztunnel-c6435 --since=30m | grep -E 'dst.service=\"orders.shop.svc.cluster.local\"|error'   # node worker-a",
	"istioctl proxy-config cluster productpage-7d4f9-abcde.shop --fqdn reviews.shop.svc.cluster.local -o json",
}

// paneLines are the lines of the detail pane (the right one of the two
// bordered panes) from the one that starts with heading to the first
// blank one after a command, as plain text.
func paneLines(screen, heading string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(screen, "\n") {
		parts := strings.Split(line, "│")
		if len(parts) < 4 {
			continue
		}
		text := strings.TrimRight(parts[len(parts)-2], " ")
		switch {
		case strings.HasPrefix(strings.TrimSpace(text), heading):
			in = true
		case !in:
		case strings.TrimSpace(text) == "" && len(out) > 0:
			return out
		case strings.Contains(text, "$ ") || len(out) > 0:
			out = append(out, text)
		}
	}
	return out
}

// checkCommandLines holds the pane's lines to the commands: each command
// starts on a "$ " line and goes on over the lines that follow, which are
// broken only between its shell words (a line a break ends says so with
// " \"), except a word wider than the pane, which stands alone on its
// line and may be cut at the pane's edge (width, the pane's inner width).
func checkCommandLines(t *testing.T, lines []string, cmds []string, width int) {
	t.Helper()
	li := 0
	for ci, cmd := range cmds {
		want := common.ShellWords(cmd)
		wi := 0
		for first := true; wi < len(want); first = false {
			if li >= len(lines) {
				t.Fatalf("command %d ends early at word %q; the pane:\n%s", ci+1, want[wi].Text, strings.Join(lines, "\n"))
			}
			line := lines[li]
			li++
			text := strings.TrimSpace(line)
			if first != strings.HasPrefix(text, "$ ") {
				t.Fatalf("command %d: line %q where a command should %s", ci+1, line, map[bool]string{true: "start", false: "go on"}[first])
			}
			text = strings.TrimPrefix(text, "$ ")
			cont := strings.HasSuffix(text, " \\")
			text = strings.TrimSuffix(text, " \\")
			got := common.ShellWords(text)
			for gi, g := range got {
				switch {
				case wi >= len(want):
					t.Fatalf("command %d: %q is no word of it", ci+1, g.Text)
				case g.Text == want[wi].Text:
				case len(got) == 1 && strings.HasPrefix(want[wi].Text, g.Text) && len([]rune(line)) >= width:
					// A word wider than the pane, alone, at its edge.
				default:
					t.Fatalf("command %d is broken inside a word: line %q has %q for %q (word %d of the line)", ci+1, line, g.Text, want[wi].Text, gi+1)
				}
				wi++
			}
			if wi < len(want) && !cont && len([]rune(line)) < width {
				t.Errorf("command %d: line %q goes on without saying so (\" \\\")", ci+1, line)
			}
		}
	}
}

// The "By hand" commands of a step break only between shell words (no
// istio-/proxy, no orders.shop/.svc), each continued line ends in " \",
// and y copies them whole, one a line; they are printed again on quit.
func TestByHandCommandsWrapBetweenWordsAndCopy(t *testing.T) {
	script := outlierScript()
	res := script.Results["envoy-clusters"]
	res.Commands = byHand
	script.Results["envoy-clusters"] = res
	eng := enginetest.New(script)
	h := start(t, eng, 90, 60, Options{})
	walkToEnvoy(h)
	screen := h.waitFor("By hand", "(y copies)")
	checkCommandLines(t, paneLines(screen, "By hand"), byHand, paneWidth)
	// The long pattern stands whole: → scrolls to its end.
	if !strings.Contains(screen, "←→ wide lines") {
		t.Errorf("the pane does not say its lines go on past its edge:\n%s", screen)
	}
	for i := 0; i < 10; i++ {
		h.key("right")
	}
	h.waitFor(`.svc.cluster.local"'`)

	h.key("y")
	h.waitFor("copied envoy-clusters by hand")
	h.key("q")
	h.waitFor("Quit meshtriage?")
	h.key("y")
	fm := h.tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*frames).m
	if farewell := fm.Farewell(); !strings.Contains(farewell, strings.Join(byHand, "\n")) {
		t.Errorf("y did not copy the commands whole, one a line:\n%s", farewell)
	}
}

// An open hypothesis's pane: what would settle it breaks between words,
// and y copies it.
func TestSettleCommandsWrapBetweenWordsAndCopy(t *testing.T) {
	script := outlierScript()
	script.Undecided = []engine.Undecided{{Cause: "mtls.plaintext-to-strict", Title: "Plaintext to a STRICT upstream", Confidence: "high",
		Unknown: []string{"ztunnel_strict_rejections"}, Why: "ztunnel did not report it", Settle: byHand}}
	eng := enginetest.New(script)
	h := start(t, eng, 90, 60, Options{})
	walkToEnvoy(h)
	h.waitFor("Open hypotheses")
	for i := 0; i < 10 && !strings.Contains(h.quiet(), "What would settle it"); i++ {
		h.key("down")
	}
	screen := h.waitFor("What would settle it", "y copies these commands")
	checkCommandLines(t, paneLines(screen, "What would settle it"), byHand, paneWidth)
	h.key("y")
	h.waitFor("copied mtls.plaintext-to-strict: what would settle it")
}

// paneWidth is the detail pane's inner width in a 90-column terminal (the
// checklist takes 36).
const paneWidth = 90 - 36 - 4
