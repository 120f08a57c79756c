// Package vocabulary is the closed vocabulary of what the data plane
// reports, as Cilium's drop reasons are one: every Envoy response flag
// (probes/parse/accesslog.Flags) with its response_code_details and
// upstream_transport_failure_reason, and every ztunnel error kind
// (probes/parse/ztunnel.ErrorKinds), on every hop it can be seen on, maps
// to the causes of the catalogue that produce it, or to an explicit
// "unexplained" row that says what it means when the catalogue has no
// cause for it, or (a flag that is no failure) to a benign one. The mapping
// is Istio knowledge, so it is data: assets/vocabulary/dataplane.yaml,
// validated at load against the cause catalogue and the two closed sets.
// The probes that read access logs and ztunnel turn what they saw into
// facts through it; a probe never names a cause as found, only as what the
// vocabulary says could explain what it saw.
package vocabulary

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/ztunnel"
)

// Hop is where along the path a flag or an error was seen.
type Hop string

const (
	// SidecarOutbound is the caller's sidecar, sending (its outbound
	// entries for the target).
	SidecarOutbound Hop = "sidecar-outbound"
	// SidecarInbound is a destination pod's sidecar, receiving (inbound|).
	SidecarInbound Hop = "sidecar-inbound"
	// Gateway is an Istio gateway caller's Envoy.
	Gateway Hop = "gateway"
	// Waypoint is the Service's waypoint Envoy.
	Waypoint Hop = "waypoint"
	// ZtunnelSource is the caller's ztunnel (direction outbound).
	ZtunnelSource Hop = "ztunnel-source"
	// ZtunnelDestination is the destination's ztunnel (inbound).
	ZtunnelDestination Hop = "ztunnel-destination"
)

// EnvoyHops are the hops an Envoy logs; ZtunnelHops those ztunnel logs.
var (
	EnvoyHops   = []Hop{SidecarOutbound, SidecarInbound, Gateway, Waypoint}
	ZtunnelHops = []Hop{ZtunnelSource, ZtunnelDestination}
)

// Text names the hop for an on-call.
func (h Hop) Text() string {
	switch h {
	case SidecarOutbound:
		return "the caller's sidecar (outbound)"
	case SidecarInbound:
		return "the destination's sidecar (inbound)"
	case Gateway:
		return "the gateway"
	case Waypoint:
		return "the waypoint"
	case ZtunnelSource:
		return "the caller's ztunnel"
	case ZtunnelDestination:
		return "the destination's ztunnel"
	}
	return string(h)
}

// Row is one line of the vocabulary: on its hops, an entry that meets its
// conditions means what its answer says. Rows are tried in order; the last
// row of a flag or error on a hop has no condition, so every one has an
// answer.
type Row struct {
	Hops []Hop `json:"hops"`
	// Envoy conditions: TCP (a TCP proxy entry, or an HTTP one when
	// false), and any of Details / Transport as a part of
	// response_code_details / upstream_transport_failure_reason (compared
	// without case, spaces and underscores alike).
	TCP       *bool    `json:"tcp,omitempty"`
	Details   []string `json:"details,omitempty"`
	Transport []string `json:"transport,omitempty"`
	// Codes: any of them is the entry's response code (Envoy answers a
	// missing cluster 500 under Gateway API semantics, 503 otherwise).
	Codes []int `json:"codes,omitempty"`
	// ztunnel conditions: HBONE (ztunnel connected to a pod's 15008), and
	// any of Error as a part of the error text.
	HBONE *bool    `json:"hbone,omitempty"`
	Error []string `json:"error,omitempty"`

	// The answer: exactly one of them.
	Causes      []string `json:"causes,omitempty"`
	Unexplained string   `json:"unexplained,omitempty"`
	Benign      string   `json:"benign,omitempty"`
}

func (r *Row) conditional() bool {
	return r.TCP != nil || len(r.Details) > 0 || len(r.Transport) > 0 || len(r.Codes) > 0 || r.HBONE != nil || len(r.Error) > 0
}

// Vocabulary is the loaded mapping.
type Vocabulary struct {
	Envoy   map[string][]Row `json:"envoy"`
	Ztunnel map[string][]Row `json:"ztunnel"`
}

// NoFlag is the key of the rows for a failed entry without any response
// flag (a 5xx the upstream sent, a 403 of an RBAC filter): Envoy's own
// "-".
const NoFlag = "-"

// Path is the vocabulary's file in assets.FS.
const Path = "vocabulary/dataplane.yaml"

var loadDefault = sync.OnceValues(func() (*Vocabulary, error) {
	return Load(assets.FS, Path, assets.Causes)
})

// Default is the embedded vocabulary. It is validated by this package's
// tests; a broken one panics, which probes.Run turns into the probe's error.
func Default() *Vocabulary {
	v, err := loadDefault()
	if err != nil {
		panic(err)
	}
	return v
}

// Load reads and validates a vocabulary against the cause catalogue and
// the closed sets of flags and ztunnel errors.
func Load(fsys fs.FS, path string, causes []string) (*Vocabulary, error) {
	b, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	var v Vocabulary
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := v.validate(causes); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &v, nil
}

func (v *Vocabulary) validate(causes []string) error {
	var errs []string
	catalogue := map[string]bool{}
	for _, c := range causes {
		catalogue[c] = true
	}
	var flags []string
	for _, f := range accesslog.Flags {
		flags = append(flags, f.Short)
	}
	flags = append(flags, NoFlag)
	var kinds []string
	for _, k := range ztunnel.ErrorKinds {
		kinds = append(kinds, k.Name)
	}
	check := func(what string, table map[string][]Row, closed []string, hops []Hop) {
		for key := range table {
			if !slices.Contains(closed, key) {
				errs = append(errs, fmt.Sprintf("%s %q is not in the closed set", what, key))
			}
		}
		for _, key := range closed {
			rows, ok := table[key]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s %s has no row", what, key))
				continue
			}
			final := map[Hop]bool{}
			for i := range rows {
				r := &rows[i]
				at := fmt.Sprintf("%s %s row %d", what, key, i+1)
				answers := 0
				if len(r.Causes) > 0 {
					answers++
				}
				if strings.TrimSpace(r.Unexplained) != "" {
					answers++
				}
				if strings.TrimSpace(r.Benign) != "" {
					answers++
				}
				if answers != 1 {
					errs = append(errs, at+": needs exactly one of causes, unexplained, benign")
				}
				for _, c := range r.Causes {
					if !catalogue[c] {
						errs = append(errs, fmt.Sprintf("%s: cause %q is not in the catalogue", at, c))
					}
				}
				if len(r.Hops) == 0 {
					errs = append(errs, at+": no hops")
				}
				envoyRow := hops[0] == SidecarOutbound
				if envoyRow && (r.HBONE != nil || len(r.Error) > 0) || !envoyRow && (r.TCP != nil || len(r.Details) > 0 || len(r.Transport) > 0 || len(r.Codes) > 0) {
					errs = append(errs, at+": a condition of the other table")
				}
				for _, h := range r.Hops {
					if !slices.Contains(hops, h) {
						errs = append(errs, fmt.Sprintf("%s: hop %q is not one of %v", at, h, hops))
						continue
					}
					if final[h] {
						errs = append(errs, fmt.Sprintf("%s: never read on %s, an earlier row answers every case there", at, h))
					}
					if !r.conditional() {
						final[h] = true
					}
				}
			}
			for _, h := range hops {
				if !final[h] {
					errs = append(errs, fmt.Sprintf("%s %s: no row answers every case on %s", what, key, h))
				}
			}
		}
	}
	check("flag", v.Envoy, flags, EnvoyHops)
	check("ztunnel error", v.Ztunnel, kinds, ZtunnelHops)
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Answer is what the vocabulary says of one flag or error on one hop.
type Answer struct {
	Key string // the flag, or the ztunnel error kind
	Hop Hop
	// Causes that produce it; empty when Unexplained or Benign says why.
	Causes      []string
	Unexplained string
	Benign      string
}

// Explained: the catalogue has causes for it.
func (a Answer) Explained() bool { return len(a.Causes) > 0 }

// Flag answers one response flag (NoFlag for none) of an entry seen on hop.
func (v *Vocabulary) Flag(flag string, hop Hop, k accesslog.FailureKey) Answer {
	rows, ok := v.Envoy[flag]
	if !ok {
		return Answer{Key: flag, Hop: hop, Unexplained: "a response flag Envoy does not document (a custom flag of a filter): the filter that set it says what it means"}
	}
	for i := range rows {
		r := &rows[i]
		if !slices.Contains(r.Hops, hop) {
			continue
		}
		if r.TCP != nil && *r.TCP != k.TCP {
			continue
		}
		if len(r.Details) > 0 && !containsAny(k.Details, r.Details) {
			continue
		}
		if len(r.Transport) > 0 && !containsAny(k.Transport, r.Transport) {
			continue
		}
		if len(r.Codes) > 0 && !slices.Contains(r.Codes, k.Code) {
			continue
		}
		return r.answer(flag, hop)
	}
	panic("vocabulary: no final row for " + flag + " on " + string(hop)) // validate forbids it
}

// Entry answers a failed entry, whose flags explain it together: the
// causes of any flag (UF's, for "UF,URX", where URX only says the retries
// ran out), else the unexplained rows of its flags, else benign.
func (v *Vocabulary) Entry(hop Hop, k accesslog.FailureKey) []Answer {
	var out []Answer
	k.EachFlag(func(flag string) { out = append(out, v.Flag(flag, hop, k)) })
	var explained, unexplained []Answer
	for _, a := range out {
		switch {
		case a.Explained():
			explained = append(explained, a)
		case a.Unexplained != "":
			unexplained = append(unexplained, a)
		}
	}
	switch {
	case len(explained) > 0:
		return explained
	case len(unexplained) > 0:
		return unexplained
	}
	return out
}

// ZtunnelError answers a ztunnel error of kind seen on hop.
func (v *Vocabulary) ZtunnelError(kind string, hop Hop, hbone bool, text string) Answer {
	rows, ok := v.Ztunnel[kind]
	if !ok {
		return Answer{Key: kind, Hop: hop, Unexplained: "an error ztunnel's Error does not list"}
	}
	for i := range rows {
		r := &rows[i]
		if !slices.Contains(r.Hops, hop) {
			continue
		}
		if r.HBONE != nil && *r.HBONE != hbone {
			continue
		}
		if len(r.Error) > 0 && !containsAny(text, r.Error) {
			continue
		}
		return r.answer(kind, hop)
	}
	panic("vocabulary: no final row for " + kind + " on " + string(hop))
}

func (r *Row) answer(key string, hop Hop) Answer {
	return Answer{Key: key, Hop: hop, Causes: slices.Clone(r.Causes), Unexplained: strings.TrimSpace(r.Unexplained), Benign: strings.TrimSpace(r.Benign)}
}

// containsAny compares as Envoy varies its texts: case aside, and spaces
// and underscores alike ("delayed connect error: 111" is
// "delayed_connect_error:_111" in response_code_details).
func containsAny(s string, parts []string) bool {
	s = fold(s)
	for _, p := range parts {
		if strings.Contains(s, fold(p)) {
			return true
		}
	}
	return false
}

func fold(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "_")) }
