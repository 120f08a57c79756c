package runbook

import (
	"slices"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
)

// A rule with an unknown fact can still be ruled out by a term whose facts
// are known; the terms that hold are its evidence so far, except guards
// that hold in an empty world.
func TestCouldHoldRulesOutOnAKnownFalseTerm(t *testing.T) {
	cat := map[string]probes.FactType{"aggressive": probes.FactBool, "max_ejection": probes.FactInt, "errors": probes.FactInt, "terminating": probes.FactInt}
	c, err := compileCondition("aggressive && max_ejection == 100 && terminating == 0 && errors > 0", cat, true)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		facts   probes.Facts
		could   bool
		support []string
	}{
		{probes.Facts{"aggressive": true, "max_ejection": 100, "terminating": 0}, true, []string{"aggressive", "max_ejection == 100"}},
		{probes.Facts{"aggressive": true, "max_ejection": 50, "terminating": 0}, false, nil},
		{probes.Facts{"aggressive": false}, false, nil},
		{probes.Facts{}, true, nil},
		{probes.Facts{"terminating": 0}, true, nil},
	}
	for _, tc := range cases {
		could, support, terms := c.couldHold(tc.facts)
		if could != tc.could || !slices.Equal(support, tc.support) || terms != 4 {
			t.Errorf("facts %v: could %v support %q terms %d; want %v %q 4", tc.facts, could, support, terms, tc.could, tc.support)
		}
	}
	// A condition that is one term decides whole.
	one, err := compileCondition("errors > 0 || aggressive", cat, true)
	if err != nil {
		t.Fatal(err)
	}
	if could, _, _ := one.couldHold(probes.Facts{"aggressive": false}); !could {
		t.Error("a disjunction with an unknown side was ruled out")
	}
}
