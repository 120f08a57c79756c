package callersearch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
)

// meshKeysFormat is a JSON accessLogFormat under keys of the mesh's own,
// none of Istio's: only the format says which key holds what.
const meshKeysFormat = `{"when":"%START_TIME%","code":"%RESPONSE_CODE%","why":"%RESPONSE_FLAGS%",` +
	`"upstream":{"cluster":"%UPSTREAM_CLUSTER%","host":"%UPSTREAM_HOST%"},` +
	`"client":"%DOWNSTREAM_REMOTE_ADDRESS%","local":"%DOWNSTREAM_LOCAL_ADDRESS%","details":"%RESPONSE_CODE_DETAILS%"}`

// The inbound log ranks the callers in the mesh's own JSON keys as in
// Istio's TEXT layout: outlier-all-ejected's access lines rewritten under
// meshKeysFormat, with the mesh config declaring it, still name web by
// its 5xx. Read by the built-in layouts alone, no line is an entry.
func TestFindCallersReadsTheInboundLogByTheMeshsFormat(t *testing.T) {
	s, err := recorded.Load(assets.FS, "outlier-all-ejected")
	if err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for k, b := range s.Logs {
		if k.Container != "istio-proxy" {
			continue
		}
		var out bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			e, ok := accesslog.ParseLine(sc.Text())
			if !ok {
				out.WriteString(sc.Text() + "\n")
				continue
			}
			j, _ := json.Marshal(map[string]any{"when": e.StartTime, "code": e.ResponseCode, "why": orDash(e.Flags),
				"upstream": map[string]any{"cluster": e.UpstreamCluster, "host": orDash(e.UpstreamHost)},
				"client":   e.DownstreamRemoteAddress, "local": e.DownstreamLocalAddress, "details": e.ResponseCodeDetails})
			out.Write(append(j, '\n'))
			rewritten++
		}
		s.Logs[k] = out.Bytes()
	}
	if rewritten == 0 {
		t.Fatal("no access line to rewrite")
	}
	for _, o := range s.Objects {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "istio" {
			cm.Data = map[string]string{"mesh": "accessLogEncoding: JSON\naccessLogFormat: '" + meshKeysFormat + "'\n"}
		}
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	target := s.Target
	target.Source = nil
	res := callersearch.Find(context.Background(), cluster.NewCache(c), target, callersearch.Options{Max: 1})
	if len(res.Callers) != 1 || res.Callers[0].Pod.Name != "web-5b7d9c6f4-q8w2e" || res.Callers[0].By != callersearch.ByInboundLog {
		t.Fatalf("callers %+v; want web-5b7d9c6f4-q8w2e from the inbound log: %s", res.Callers, res.Summary())
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
