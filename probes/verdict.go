package probes

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
