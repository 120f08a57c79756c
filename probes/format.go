package probes

// Small formatting helpers shared by the probes' evidence tables.

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
