// Package probes holds the live checks of a triage. Each probe is one file in
// this folder: it declares what it reads and which facts it emits (Meta), fetches
// its inputs through a Cluster, and hands them to a pure evaluate function that
// the tests drive with recorded data.
package probes

import (
	"context"
	"fmt"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"sort"
	"time"
)

// Status is the outcome of one probe run.
type Status string

const (
	StatusPass    Status = "pass"
	StatusWarn    Status = "warn"
	StatusFail    Status = "fail"
	StatusError   Status = "error"
	StatusSkipped Status = "skipped"
)

// FactType is the type of a fact's value, so that runbook conditions can be
// type-checked when the runbook loads rather than at 3 a.m.
type FactType string

const (
	FactBool   FactType = "bool"
	FactInt    FactType = "int"
	FactFloat  FactType = "float"
	FactString FactType = "string"
	FactList   FactType = "list" // []string
)

// FactSpec declares one fact a probe may emit. Fact names are global across
// probes (snake_case, prefixed by the probe's area) because runbook conditions
// combine facts from several probes in one expression.
type FactSpec struct {
	Name string   `json:"name"`
	Type FactType `json:"type"`
	Doc  string   `json:"doc"`
}

// Meta describes a probe: the runbook refers to it by ID, the TUI shows Title,
// Reads lists the cluster APIs it touches (and so the RBAC it needs).
type Meta struct {
	ID    string     `json:"id"`
	Title string     `json:"title"`
	Reads []string   `json:"reads"`
	Facts []FactSpec `json:"facts"`
}

// Facts are the typed key/values a probe emits: bool, int, float64, string or
// []string, as declared in its Meta.
type Facts map[string]any

// Evidence is what the on-call reads to trust a result: a table and the raw
// text (a log excerpt, a JSON fragment) they would otherwise fetch by hand.
type Evidence struct {
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]string `json:"rows,omitempty"`
	Raw     string     `json:"raw,omitempty"`
}

// Result is one probe run.
type Result struct {
	Probe    string        `json:"probe"`
	Status   Status        `json:"status"`
	Summary  string        `json:"summary"`
	Evidence Evidence      `json:"evidence"`
	Facts    Facts         `json:"facts"`
	Commands []string      `json:"commands,omitempty"`
	Duration time.Duration `json:"-"`
}

// Probe is one live check.
type Probe interface {
	Meta() Meta
	Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result
}

// DefaultTimeout bounds a probe that is given a context without a deadline.
const DefaultTimeout = 20 * time.Second

// Run runs p with a deadline, turns a panic into an error result and stamps the
// probe ID and duration, so callers never see a probe crash or block.
func Run(ctx context.Context, p Probe, c cluster.Cluster, t cluster.Target) (res Result) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	start := time.Now()
	id := p.Meta().ID
	defer func() {
		if r := recover(); r != nil {
			res = Result{Status: StatusError, Summary: fmt.Sprintf("probe %s crashed: %v", id, r)}
		}
		res.Probe = id
		res.Duration = time.Since(start)
		if res.Facts == nil {
			res.Facts = Facts{}
		}
	}()
	return p.Run(ctx, c, t)
}

// CheckFacts reports facts in r that p does not declare or whose value has
// another type: a probe's tests call it on every result they check.
func CheckFacts(m Meta, r Result) error {
	declared := map[string]FactType{}
	for _, f := range m.Facts {
		declared[f.Name] = f.Type
	}
	names := make([]string, 0, len(r.Facts))
	for k := range r.Facts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		typ, ok := declared[k]
		if !ok {
			return fmt.Errorf("probe %s emitted undeclared fact %q", m.ID, k)
		}
		if !typ.Holds(r.Facts[k]) {
			return fmt.Errorf("probe %s fact %q is %T, declared %s", m.ID, k, r.Facts[k], typ)
		}
	}
	return nil
}

// Holds reports whether v is a value of type t.
func (t FactType) Holds(v any) bool {
	switch v.(type) {
	case bool:
		return t == FactBool
	case int:
		return t == FactInt
	case float64:
		return t == FactFloat
	case string:
		return t == FactString
	case []string:
		return t == FactList
	}
	return false
}

// Zero is the zero value of t, used to type-check runbook conditions.
func (t FactType) Zero() any {
	switch t {
	case FactBool:
		return false
	case FactInt:
		return 0
	case FactFloat:
		return 0.0
	case FactString:
		return ""
	case FactList:
		return []string{}
	}
	return nil
}

// ErrorResult is the result of a probe whose input could not be read.
func ErrorResult(what string, err error) Result {
	return Result{Status: StatusError, Summary: cluster.AccessProblem(what, err), Facts: Facts{}}
}
