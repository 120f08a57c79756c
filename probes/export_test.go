package probes

import "testing"

// RealworldFacts are the facts of the probes that read Envoy and Istio
// output, run on every realworld sample (realworldRuns), for the tests of
// package probes_test.
func RealworldFacts(t *testing.T) []Facts {
	var out []Facts
	for _, r := range realworldRuns(t) {
		out = append(out, r.result.Facts)
	}
	return out
}
