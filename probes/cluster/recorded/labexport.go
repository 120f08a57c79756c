package recorded

import "time"

// LineTime is the timestamp a recorded log line starts with, as Logs reads
// it for LogOptions.Since. The mesh lab stamps its fake kubelet's log lines
// with it, so a since window keeps the same lines there as here.
func LineTime(line []byte) (time.Time, bool) { return lineTime(line) }

// NewestLogTime is a scenario's "now" for LogOptions.Since: the newest
// timestamp in its logs (zero when none has one).
func NewestLogTime(logs map[LogKey][]byte) time.Time { return newestTimestamp(logs) }
