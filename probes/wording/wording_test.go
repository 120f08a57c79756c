package wording

import (
	"reflect"
	"testing"
)

func TestCountsAreMostFrequentFirstThenByKey(t *testing.T) {
	m := map[string]int{"UF 503": 2, "NR 404": 5, "DC 0": 2, "UO 503": 1}
	if got, want := Counts(m), []string{"NR 404=5", "DC 0=2", "UF 503=2", "UO 503=1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Counts = %q, want %q", got, want)
	}
	if got := Counts(nil); got == nil || len(got) != 0 {
		t.Errorf("Counts(nil) = %#v, want an empty list (a list fact is never null)", got)
	}
}

func TestUniqueNonEmpty(t *testing.T) {
	if got, want := UniqueNonEmpty("shop", "", "istio-system", "shop"), []string{"istio-system", "shop"}; !reflect.DeepEqual(got, want) {
		t.Errorf("UniqueNonEmpty = %q, want %q", got, want)
	}
	if got := AppendUnique([]string{"a"}, "a"); len(got) != 1 {
		t.Errorf("AppendUnique added a repeat: %q", got)
	}
	if CountNoun(1, "pod") != "1 pod" || CountNoun(3, "pod") != "3 pods" || PortSuffix(0) != "" || PortSuffix(80) != " port 80" {
		t.Error("CountNoun or PortSuffix")
	}
}
