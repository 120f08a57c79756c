package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/lab"
	"github.com/meshtriage/meshtriage/lab/bench"
)

// Received is one request as the API server saw it: when it arrived, and
// when its response completed (for a port-forward, when the stream ended),
// in milliseconds after the triage started.
type Received struct {
	AtMS   float64 `json:"at_ms"`
	DoneMS float64 `json:"done_ms"`
	Verb   string  `json:"verb"`
	URI    string  `json:"uri"`
	Code   int     `json:"code"`
}

// timeline reads the audit log after mark: every request of userAgent.
func timeline(l *lab.Lab, mark bench.AuditMark, start time.Time, userAgent string) ([]Received, error) {
	// bench.RequestsSince has waited for the log to settle.
	f, err := os.Open(l.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(int64(mark), io.SeekStart); err != nil {
		return nil, err
	}
	byID := map[string]*Received{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			lab.AuditEvent
			AuditID  string    `json:"auditID"`
			Received time.Time `json:"requestReceivedTimestamp"`
			StageAt  time.Time `json:"stageTimestamp"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, userAgent) {
			continue
		}
		r := byID[e.AuditID]
		if r == nil {
			r = &Received{AtMS: ms(e.Received.Sub(start)), Verb: e.Verb, URI: e.RequestURI}
			byID[e.AuditID] = r
		}
		if e.Stage == "ResponseComplete" || e.Stage == "Panic" {
			r.DoneMS, r.Code = ms(e.StageAt.Sub(start)), e.Code()
		}
	}
	out := make([]Received, 0, len(byID))
	for _, r := range byID {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AtMS < out[j].AtMS })
	return out, sc.Err()
}

func printTimeline(tl []Received) {
	fmt.Println()
	fmt.Println("| received ms | done ms | code | request |")
	fmt.Println("|---|---|---|---|")
	for _, r := range tl {
		uri := r.URI
		if len(uri) > 110 {
			uri = uri[:110] + "..."
		}
		fmt.Printf("| %.0f | %.0f | %d | %s %s |\n", r.AtMS, r.DoneMS, r.Code, r.Verb, uri)
	}
}
