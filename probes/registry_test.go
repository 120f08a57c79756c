package probes

import (
	"regexp"
	"strings"
	"testing"
)

var factName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// The runbook joins facts from many probes in one expression namespace, so a
// name declared twice, or in a shape expr cannot parse, would silently shadow.
func TestProbeMetasAreWellFormed(t *testing.T) {
	ids := map[string]bool{}
	owner := map[string]string{}
	for _, p := range All() {
		m := p.Meta()
		if m.ID == "" || m.Title == "" || len(m.Reads) == 0 {
			t.Errorf("probe %T: meta needs ID, Title and Reads: %+v", p, m)
		}
		if ids[m.ID] {
			t.Errorf("probe ID %q declared twice", m.ID)
		}
		ids[m.ID] = true
		for _, f := range m.Facts {
			if !factName.MatchString(f.Name) {
				t.Errorf("probe %s: fact %q is not snake_case", m.ID, f.Name)
			}
			if prev, ok := owner[f.Name]; ok {
				t.Errorf("fact %q declared by %s and %s", f.Name, prev, m.ID)
			}
			owner[f.Name] = m.ID
			if f.Type.Zero() == nil {
				t.Errorf("probe %s: fact %q has unknown type %q", m.ID, f.Name, f.Type)
			}
			if strings.TrimSpace(f.Doc) == "" {
				t.Errorf("probe %s: fact %q has no doc", m.ID, f.Name)
			}
		}
	}
}
