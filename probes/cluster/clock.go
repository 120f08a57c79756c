package cluster

import "time"

// Clock is a source whose "now" is not the wall clock's: a recording's is
// when it was captured, so that a replay judges ages as the live triage
// did ("ready for over a minute" must not become true by replaying later).
type Clock interface {
	// Now is the source's present; ok is false when it is not known (a
	// recording with no capture time and no timestamped line).
	Now() (now time.Time, ok bool)
}

// Now is c's present, looked for through the caches and wrappers in front
// of the source: a live cluster's is the wall clock's.
func Now(c Cluster) (time.Time, bool) {
	for c != nil {
		if k, ok := c.(Clock); ok {
			return k.Now()
		}
		u, ok := c.(interface{ Unwrap() Cluster })
		if !ok {
			break
		}
		c = u.Unwrap()
	}
	return time.Now(), true
}
