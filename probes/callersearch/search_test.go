package callersearch_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/prometheus"
)

// Every embedded scenario names the caller that saw the 503s. With that
// name taken away, the search must find it among the callers it reads, and
// say where it found it.
func TestFindCallersFindsEachScenariosCaller(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		target, caller, c := withoutCaller(t, name)
		if caller == nil {
			continue
		}
		want := *caller
		t.Run(name, func(t *testing.T) {
			res := callersearch.Find(context.Background(), cluster.NewCache(c), target, callersearch.Options{})
			if len(res.Callers) == 0 || len(res.Callers) > callersearch.DefaultMax {
				t.Fatalf("read %d callers, want 1..%d: %s", len(res.Callers), callersearch.DefaultMax, res.Summary())
			}
			for _, got := range res.Callers {
				if got.Pod == want {
					if got.Why == "" || got.By == "" {
						t.Errorf("caller %+v: want the evidence and where it came from", got)
					}
					return
				}
			}
			t.Errorf("%s is not among the callers read: %s", want, res.Summary())
		})
	}
}

// The outlier incident's caller shows in the target's inbound log with the
// 500s that got every host ejected: the log ranks it, not the namespace.
func TestFindCallersRanksInboundPeersByTheir5xx(t *testing.T) {
	target, _, c := withoutCaller(t, "outlier-all-ejected")
	res := callersearch.Find(context.Background(), c, target, callersearch.Options{Max: 1})
	if len(res.Callers) != 1 {
		t.Fatalf("callers %+v, want one", res.Callers)
	}
	got := res.Callers[0]
	if got.Pod.Name != "web-5b7d9c6f4-q8w2e" || got.By != callersearch.ByInboundLog || !strings.HasPrefix(got.Why, "3 failed of ") {
		t.Errorf("caller %+v; want web-5b7d9c6f4-q8w2e from the inbound log with its 3 5xx", got)
	}
}

// With Prometheus, the workload whose sidecar reports the most 503s comes
// first, even when another workload sends more requests; traffic from
// outside the mesh (source_workload "unknown") is no caller to read.
func TestFindCallersAsksPrometheusFirst(t *testing.T) {
	target, caller, c := withoutCaller(t, "healthy")
	web := *caller
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.FormValue("query")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[
{"metric":{"source_workload":"unknown","source_workload_namespace":"unknown","response_code":"503"},"value":[1,"9"]},
{"metric":{"source_workload":"batch","source_workload_namespace":"jobs","response_code":"200"},"value":[1,"40"]},
{"metric":{"source_workload":"web","source_workload_namespace":"%s","response_code":"503"},"value":[1,"2.5"]},
{"metric":{"source_workload":"web","source_workload_namespace":"%s","response_code":"200"},"value":[1,"7.5"]}]}}`, web.Namespace, web.Namespace)
	}))
	defer srv.Close()
	res := callersearch.Find(context.Background(), c, target, callersearch.Options{Prometheus: prometheus.Client{URL: srv.URL}, Now: time.Unix(1, 0)})
	if !strings.Contains(query, `destination_service="`+target.Host()+`"`) || !strings.Contains(query, "source_workload") {
		t.Errorf("query %s: want the target's series by source workload", query)
	}
	if len(res.Callers) == 0 || res.Callers[0].Pod != web || res.Callers[0].By != callersearch.ByPrometheus || !strings.HasPrefix(res.Callers[0].Why, "2.50 503/s of 10.0 req/s") {
		t.Fatalf("first caller %+v, want %s from Prometheus at 2.5 503/s of 10 req/s: %s", res.Callers, web, res.Summary())
	}
	if !strings.Contains(strings.Join(res.Searched, "; "), "Prometheus") {
		t.Errorf("searched %q: want Prometheus named", res.Searched)
	}
}

// withoutCaller is an embedded scenario's cluster, and its target with the
// caller it names (nil when none) taken away for the search to find.
func withoutCaller(t *testing.T, name string) (cluster.Target, *cluster.PodRef, cluster.Cluster) {
	t.Helper()
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	target, caller := s.Target, s.Target.Source
	target.Source = nil
	return target, caller, c
}
