package proxylog

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/ztunnel"
	"github.com/meshtriage/meshtriage/probes/vocabulary"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// Reading is what the vocabulary makes of the failures a probe saw: those
// the catalogue has causes for, and those it has none for, each named
// with its hop. The probes that read Envoy access logs and ztunnel's
// (access-log, waypoint, ztunnel) state it in their facts and summaries.
type Reading struct {
	// unexplained counts, by their line, the failures no cause of the
	// catalogue produces; explained the ones some do, with the causes.
	unexplained map[string]int
	texts       map[string]string
	explained   map[string]int
	causes      map[string][]string
	// benign counts what is no failure of the data plane (an error the
	// app answered itself), with why.
	benign map[string]int
}

// NewReading is an empty reading.
func NewReading() *Reading {
	return &Reading{unexplained: map[string]int{}, texts: map[string]string{}, explained: map[string]int{}, causes: map[string][]string{}, benign: map[string]int{}}
}

// AddEnvoy reads a tally's failed entries as seen on hop.
func (r *Reading) AddEnvoy(hop vocabulary.Hop, c accesslog.Counter) {
	v := vocabulary.Default()
	for _, key := range c.Keys() {
		n := c.Counts[key]
		k := accesslog.ParseFailureKey(key)
		for _, a := range v.Entry(hop, k) {
			what := envoyFailureName(a.Key, k)
			switch {
			case a.Explained():
				line := what + " at " + hop.Text()
				r.explained[line] += n
				r.causes[line] = a.Causes
			case a.Unexplained != "":
				line := what + " at " + hop.Text()
				r.unexplained[line] += n
				r.texts[line] = a.Unexplained
			case a.Benign != "":
				line := what + " at " + hop.Text()
				r.benign[line] += n
				r.texts[line] = a.Benign
			}
		}
	}
}

// envoyFailureName names a flag of an entry the way its log line shows it:
// "UF 503 (delayed connect error: 111)", "- 503 (via_upstream)", "NR TCP
// (filter_chain_not_found)".
func envoyFailureName(flag string, k accesslog.FailureKey) string {
	code := fmt.Sprint(k.Code)
	if k.TCP {
		code = "TCP"
	}
	name := flag + " " + code
	if why := cmp.Or(k.Transport, k.Details); why != "" {
		if len(why) > 120 {
			why = why[:120] + "..."
		}
		name += " (" + why + ")"
	}
	return name
}

// AddZtunnel reads a ztunnel tally's failed entries.
func (r *Reading) AddZtunnel(errors map[string]int) {
	v := vocabulary.Default()
	for key, n := range errors {
		k := ztunnel.ParseErrorKey(key)
		hop := vocabulary.ZtunnelSource
		if k.Hop == "destination" {
			hop = vocabulary.ZtunnelDestination
		}
		a := v.ZtunnelError(k.Kind, hop, k.HBONE, k.Error)
		text := k.Error
		if len(text) > 120 {
			text = text[:120] + "..."
		}
		line := fmt.Sprintf("%s at %s (%q)", k.Kind, hop.Text(), text)
		switch {
		case a.Explained():
			r.explained[line] += n
			r.causes[line] = a.Causes
		case a.Unexplained != "":
			r.unexplained[line] += n
			r.texts[line] = a.Unexplained
		}
	}
}

// Unexplained lists the failures no cause explains, as "LINE=COUNT", most
// frequent first: the fact a probe states them by.
func (r *Reading) Unexplained() []string { return wording.Counts(r.unexplained) }

// Summary says the unexplained failures with what they mean, for a probe's
// summary line: an unexplained finding shows it as it is.
func (r *Reading) Summary() string {
	if len(r.unexplained) == 0 {
		return ""
	}
	var parts []string
	for i, k := range wording.ByCount(r.unexplained) {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(r.unexplained)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s x%d: %s", k, r.unexplained[k], r.texts[k]))
	}
	return "no cause of the runbook produces " + strings.Join(parts, "; ")
}

// Raw lists every reading with its causes or meaning, for the evidence.
func (r *Reading) Raw() []string {
	var out []string
	for _, k := range wording.ByCount(r.explained) {
		out = append(out, fmt.Sprintf("vocabulary: %s x%d: produced by %s", k, r.explained[k], strings.Join(r.causes[k], ", ")))
	}
	for _, k := range wording.ByCount(r.unexplained) {
		out = append(out, fmt.Sprintf("vocabulary: %s x%d: unexplained: %s", k, r.unexplained[k], r.texts[k]))
	}
	for _, k := range wording.ByCount(r.benign) {
		out = append(out, fmt.Sprintf("vocabulary: %s x%d: no data-plane failure: %s", k, r.benign[k], r.texts[k]))
	}
	return out
}
