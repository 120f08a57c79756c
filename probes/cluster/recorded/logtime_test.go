package recorded

import (
	"testing"
	"time"
)

func TestLineTime(t *testing.T) {
	for line, want := range map[string]string{
		`[2026-12-02T20:34:52.681Z] "GET / HTTP/1.1" 503 UO - - "-" 0 81 0 - "-" "-" "-" "orders:8080" "-" outbound|8080||orders.shop.svc.cluster.local - 10.96.14.20:8080 10.244.0.9:34774 - default`: "2026-12-02T20:34:52.681Z",
		"2026-11-29T15:41:55.118000Z\tinfo\tFLAG: --concurrency=\"0\"": "2026-11-29T15:41:55.118Z",
		// accessLogEncoding: JSON, keys sorted: start_time is not first.
		`{"authority":"orders:8080","response_code":503,"start_time":"2026-12-02T20:34:52.681Z","upstream_cluster":"outbound|8080||orders.shop.svc.cluster.local;"}`: "2026-12-02T20:34:52.681Z",
		"2026/12/02 20:34:52 listening": "2026-12-02T20:34:52Z",
		// The mesh's own JSON keys (accessLogFormat): the first string
		// value that is an RFC 3339 time, whatever its key.
		`{"code":503,"upstream":{"cluster":"outbound|8080||orders.shop.svc.cluster.local"},"when":"2026-12-02T20:34:52.681Z"}`: "2026-12-02T20:34:52.681Z",
	} {
		got, ok := lineTime([]byte(line))
		w, _ := time.Parse(time.RFC3339Nano, want)
		if !ok || !got.Equal(w) {
			t.Errorf("lineTime(%.40q) = %v %v, want %v", line, got, ok, w)
		}
	}
	for _, line := range []string{`{"level":"info","msg":"ready"}`, "a stack trace line", ""} {
		if got, ok := lineTime([]byte(line)); ok {
			t.Errorf("lineTime(%q) = %v", line, got)
		}
	}
}
