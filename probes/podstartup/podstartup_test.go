package podstartup

import (
	"testing"
	"time"
)

var podCreated = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

func TestConnectionRefusedOnlyCountsAtStartup(t *testing.T) {
	late := "2026-12-02T03:00:00Z INFO up\n2026-12-02T03:05:00Z ERROR dial tcp: connect: connection refused\n"
	if connectionRefusedAtStart([]byte(late)) {
		t.Error("a refusal five minutes in is not a startup refusal")
	}
	if !connectionRefusedAtStart([]byte("booting\nError: connect ECONNREFUSED... connection refused\n")) {
		t.Error("untimestamped early refusal missed")
	}
}

// Without pilot-agent's log, whole-second container times are all there is:
// an app started in the proxy container's start second counts as started
// before Envoy was ready, a later one does not, and the ready line, when
// present, is compared exactly.
func TestAppBeforeReadyAtSecondPrecision(t *testing.T) {
	second := podCreated.Add(time.Second)
	cases := []struct {
		name         string
		app, ready   time.Time
		readyFromLog bool
		want         bool
	}{
		{"same second, no log", second, second, false, true},
		{"a second later, no log", second.Add(time.Second), second, false, false},
		{"a second earlier, no log", podCreated, second, false, true},
		{"same instant as the ready line", second, second, true, false},
		{"before the ready line", second, second.Add(time.Millisecond), true, true},
	}
	for _, c := range cases {
		if got := appBeforeReady(c.app, c.ready, c.readyFromLog); got != c.want {
			t.Errorf("%s: appBeforeReady = %v, want %v", c.name, got, c.want)
		}
	}
}
