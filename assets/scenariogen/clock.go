package main

import "time"

// A scenario's times are fixed wall-clock instants in UTC, printed the way
// each component prints them.

const day = 24 * time.Hour

// at parses a scenario's wall-clock time, always UTC.
func at(clock string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05", clock)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// apiTime is RFC 3339 seconds, as the API server prints object times.
func apiTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// accessLogTime is milliseconds, as Envoy's access log prints START_TIME.
func accessLogTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// agentTime is microseconds, as pilot-agent and Envoy stamp their own lines.
func agentTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
