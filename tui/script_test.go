package tui

import (
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/enginetest"
)

// outlierScript is the outlier-all-ejected incident as a scripted runbook:
// the Service and endpoints look fine, Envoy reports every host ejected, and
// the DestinationRule's outlierDetection explains why.
func outlierScript() enginetest.Script {
	ms := time.Millisecond
	return enginetest.Script{
		Target:   cluster.Target{Namespace: "shop", Service: "reviews", Port: 9080, Source: &cluster.PodRef{Namespace: "shop", Name: "productpage-7d4f9-abcde"}},
		Question: "What are the callers seeing?",
		Symptoms: []engine.Symptom{
			{ID: "callers-503", Title: "Callers get 503s"},
			{ID: "startup-restarts", Title: "Pods restart at startup with connection refused"},
			{ID: "rollout-503", Title: "503 bursts during rollouts"},
		},
		Steps: []engine.Step{
			{ID: "target", Title: "Service and selected pods", Probe: "target", Tell: "Check the Service selects pods that carry a sidecar."},
			{ID: "endpoints", Title: "Kubernetes endpoints", Probe: "endpoints"},
			{ID: "envoy-clusters", Title: "Envoy upstream hosts", Probe: "envoy-clusters",
				Tell:     "Ask the caller's Envoy what it thinks of each upstream host before restarting anything.",
				Warnings: []engine.Warning{{ID: "restart-first", Title: "Do not restart pods before reading Envoy admin", Text: "A restart wipes the ejection state that explains the 503s."}}},
			{ID: "destination-rules", Title: "DestinationRule traffic policy", Probe: "destination-rules"},
			{ID: "access-log", Title: "Proxy 503 log lines", Probe: "access-log"},
			{ID: "mtls", Title: "mTLS mode on both sides", Probe: "mtls"},
		},
		Rules: map[string][]enginetest.Rule{
			"target":    {{Next: "endpoints", Reason: "3/3 pods have a sidecar -> check endpoints"}},
			"endpoints": {{Next: "envoy-clusters", Reason: "3 endpoints ready -> ask Envoy"}},
			"envoy-clusters": {
				{If: func(f probes.Facts) bool { return f["envoy_hosts_outlier_ejected"] == 3 }, Next: "destination-rules", Reason: "0/3 hosts healthy -> check outlier ejection"},
				{Next: "access-log", Reason: "hosts healthy -> read the 503 log lines"},
			},
			"destination-rules": {{Cause: "outlier.all-ejected", Reason: "consecutive5xxErrors 1, maxEjectionPercent 100"}},
		},
		Results: map[string]probes.Result{
			"target": {Status: probes.StatusPass, Summary: "svc/reviews selects 3 pods, all with an istio-proxy", Duration: 42 * ms,
				Facts:    probes.Facts{"target_service_found": true, "target_pods_selected": 3, "target_pods_with_sidecar": 3},
				Commands: []string{"kubectl -n shop get svc reviews -o yaml", "kubectl -n shop get pods -l app=reviews"}},
			"endpoints": {Status: probes.StatusPass, Summary: "3 ready, 0 not ready (EndpointSlice)", Duration: 31 * ms,
				Facts: probes.Facts{"endpoints_ready": 3, "endpoints_not_ready": 0}},
			"envoy-clusters": {Status: probes.StatusFail, Summary: "0/3 hosts healthy: 3 failed_outlier_check", Duration: 312 * ms,
				Evidence: probes.Evidence{
					Columns: []string{"HOST", "HEALTH", "RQ 5XX"},
					Rows: [][]string{
						{"10.244.1.17:9080", "failed_outlier_check", "41"},
						{"10.244.2.9:9080", "failed_outlier_check", "38"},
						{"10.244.3.4:9080", "failed_outlier_check", "44"},
					},
					Raw: "outbound|9080||reviews.shop.svc.cluster.local::10.244.1.17:9080::health_flags::/failed_outlier_check",
				},
				Facts:    probes.Facts{"envoy_hosts_total": 3, "envoy_hosts_healthy": 0, "envoy_hosts_outlier_ejected": 3},
				Commands: []string{"kubectl -n shop exec productpage-7d4f9-abcde -c istio-proxy -- pilot-agent request GET 'clusters?format=json'"}},
			"destination-rules": {Status: probes.StatusWarn, Summary: "reviews: outlierDetection consecutive5xxErrors 1, maxEjectionPercent 100", Duration: 18 * ms,
				Facts: probes.Facts{"dr_outlier_aggressive": true}},
			"access-log": {Status: probes.StatusFail, Summary: "212 lines with 503 UH (no healthy upstream)", Duration: 95 * ms},
			"mtls":       {Status: probes.StatusPass, Summary: "ISTIO_MUTUAL to a STRICT upstream with sidecars: consistent", Duration: 27 * ms},
		},
		Causes: []engine.Cause{
			{
				ID: "outlier.all-ejected", Title: "Outlier detection ejected every host",
				Summary: "Envoy ejected all upstream hosts (failed_outlier_check), so it answers 503 UH without trying any.",
				Fixes: []engine.Fix{{
					ID: "relax-outlier", Title: "Relax outlierDetection",
					Text:      "Eject on more consecutive errors and never eject the whole pool.",
					YAML:      []string{"trafficPolicy:\n  outlierDetection:\n    consecutive5xxErrors: 5\n    interval: 10s\n    baseEjectionTime: 30s\n    maxEjectionPercent: 50"},
					Commands:  []string{"kubectl -n shop edit destinationrule reviews"},
					Tradeoffs: []string{"a failing host keeps receiving traffic for longer"},
				}},
				Verify: []engine.VerifyStep{
					{Describe: "Envoy sees healthy hosts again", Probe: "envoy-clusters", Expect: "envoy_hosts_healthy > 0"},
					{Describe: "A test request through the caller's sidecar returns 200", Command: "kubectl -n shop exec productpage-7d4f9-abcde -- curl -s -o /dev/null -w '%{http_code}' http://reviews:9080/"},
				},
				Warnings: []engine.Warning{{ID: "c5xx-1", Title: "consecutive5xxErrors: 1 ejects a host on its first error"}},
			},
			{ID: "mtls.plaintext-to-strict", Title: "Plaintext to a STRICT upstream"},
		},
		Findings: map[string]engine.Finding{
			"outlier.all-ejected": {Cause: "outlier.all-ejected", Confidence: "high", Summary: "3/3 hosts ejected by outlier detection",
				Evidence: []engine.Evidence{
					{Step: "envoy-clusters", Reason: "0/3 hosts healthy", When: "envoy_hosts_healthy == 0 && envoy_hosts_outlier_ejected > 0",
						Facts: []string{"envoy_hosts_healthy=0", "envoy_hosts_outlier_ejected=3"}, Probes: []string{"envoy-clusters fail: 0/3 hosts healthy: 3 failed_outlier_check"}},
					{Step: "destination-rules", Reason: "consecutive5xxErrors 1, maxEjectionPercent 100", When: "dr_outlier_aggressive",
						Facts: []string{"dr_outlier_aggressive=true"}},
				}},
		},
		Verify: map[string][]engine.VerifyResult{
			"outlier.all-ejected": {
				{Step: engine.VerifyStep{Describe: "Envoy sees healthy hosts again", Probe: "envoy-clusters", Expect: "envoy_hosts_healthy > 0"}, Passed: true,
					Result: probes.Result{Status: probes.StatusPass, Summary: "3/3 hosts healthy"}},
				{Step: engine.VerifyStep{Describe: "A test request through the caller's sidecar returns 200", Command: "kubectl -n shop exec productpage-7d4f9-abcde -- curl -s -o /dev/null -w '%{http_code}' http://reviews:9080/"}, Manual: true},
			},
		},
		Hold: map[string]bool{},
	}
}
