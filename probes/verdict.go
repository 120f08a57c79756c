package probes

import (
	"cmp"
	"strings"
)

// Building a probe's Result: the statuses compared, a result with nothing
// read, list facts, and the one threshold two probes judge by.

// skippedResult is a probe result with nothing read: no facts, so the
// runbook treats every fact of the probe as unknown.
func skippedResult(summary string, commands []string) Result {
	return Result{Status: StatusSkipped, Summary: summary, Facts: Facts{}, Commands: commands}
}

// worse returns the more severe of two statuses.
func worse(a, b Status) Status {
	rank := map[Status]int{StatusSkipped: 0, StatusPass: 1, StatusWarn: 2, StatusFail: 3, StatusError: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// nonNil keeps a list fact a list: [] when empty, never null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TinyPoolLimit is where a connection-pool limit stops being a capacity
// choice and starts overflowing (503 UO) under ordinary load: the one
// threshold the DestinationRule and the Envoy config probes judge with.
const TinyPoolLimit = 10

// poolTiny: a limit that is set (Istio writes 4294967295 for none) and
// below TinyPoolLimit.
func poolTiny[N int32 | uint32 | int64 | uint64 | int](v N) bool {
	return v > 0 && v < TinyPoolLimit
}

// verdict is the one rule by which a probe's findings become its status
// and summary: a problem fails the probe; else a warning (something wrong
// that fails no request, or what the probe could not read) warns it; else
// it passes.
type verdict struct {
	// Head says what the probe read, in a few words: a summary is Head,
	// then "; " and the problems or the warnings.
	Head     string
	Problems []string
	Warnings []string
	// Pass is the summary of a pass; Head when empty.
	Pass string
	// FailWithWarnings: a failing summary lists the warnings after the
	// problems.
	FailWithWarnings bool
	// FailWithoutHead: a failing summary is the problems alone, where
	// Head says what is fine ("no DestinationRule applies").
	FailWithoutHead bool
	// WarnSep joins Head and the warnings of a warning summary; "; "
	// when empty.
	WarnSep string
}

// judge returns the status and the summary.
func (v verdict) judge() (Status, string) {
	switch {
	case len(v.Problems) > 0:
		parts := v.Problems
		if v.FailWithWarnings {
			parts = append(append([]string(nil), v.Problems...), v.Warnings...)
		}
		summary := strings.Join(parts, "; ")
		if !v.FailWithoutHead {
			summary = v.Head + "; " + summary
		}
		return StatusFail, summary
	case len(v.Warnings) > 0:
		sep := cmp.Or(v.WarnSep, "; ")
		return StatusWarn, v.Head + sep + strings.Join(v.Warnings, sep)
	}
	return StatusPass, cmp.Or(v.Pass, v.Head)
}
