package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// seriesKey is one istio_requests_total series a source sidecar reports.
type seriesKey struct {
	code                      int
	flags, service, namespace string
	// upstreamApp is "" when the request reached no pod.
	upstreamApp string
}

// compare orders series by code, flags, service, namespace and upstream app.
func (k seriesKey) compare(o seriesKey) int {
	return cmp.Or(cmp.Compare(k.code, o.code), cmp.Compare(k.flags, o.flags), cmp.Compare(k.service, o.service),
		cmp.Compare(k.namespace, o.namespace), cmp.Compare(k.upstreamApp, o.upstreamApp))
}

// prometheus is the sidecar's /stats/prometheus at time at:
// istio_requests_total as the stats plugin reports it (reporter="source"
// for the calls the pod made), plus the Envoy cluster counters the metrics
// probe reads.
func (s *Shop) prometheus(sc *Sidecar, at time.Time) string {
	p := sc.Pod
	counts := map[seriesKey]int{}
	var keys []seriesKey
	for _, r := range s.requests {
		if r.from != p || r.at.After(at) {
			continue
		}
		k := seriesKey{code: r.code, flags: r.flags, service: r.service, namespace: r.namespace}
		if r.to != nil {
			k.upstreamApp = r.to.App
		}
		if _, seen := counts[k]; !seen {
			keys = append(keys, k)
		}
		counts[k]++
	}
	// The log window shows minutes; the counters have run for days. A
	// stable per-pod offset keeps successes far ahead of any failure count.
	for _, k := range keys {
		if k.code == 200 {
			counts[k] += 38000 + hashInt(p.Name, k.service)%20000
		}
	}
	slices.SortFunc(keys, seriesKey.compare)

	out := []string{"# TYPE envoy_server_live gauge", "envoy_server_live{} 1",
		"# TYPE istio_build gauge", fmt.Sprintf(`istio_build{component="proxy",tag="%s"} 1`, p.ProxyVersion),
		"# TYPE istio_requests_total counter"}
	for _, k := range keys {
		known := k.upstreamApp != ""
		unknownUnless := func(v string) string {
			if known {
				return v
			}
			return "unknown"
		}
		destinationService, destinationNamespace := k.service, "unknown"
		if !strings.Contains(k.service, ".") {
			destinationService = fmt.Sprintf("%s.%s.svc.%s", k.service, k.namespace, meshDomain)
			destinationNamespace = k.namespace
		}
		protocol := "tcp"
		if k.code != 0 {
			protocol = "http"
		}
		canonicalRevision := "latest"
		if known {
			canonicalRevision = "v1"
		}
		destinationCluster := "unknown"
		if known {
			destinationCluster = "Kubernetes"
		}
		labels := []Field{
			{"reporter", "source"},
			{"source_workload", p.App}, {"source_canonical_service", p.App}, {"source_canonical_revision", p.label("version", "latest")},
			{"source_workload_namespace", p.Namespace}, {"source_principal", fmt.Sprintf("spiffe://%s/ns/%s/sa/%s", meshDomain, p.Namespace, p.App)},
			{"source_app", p.App}, {"source_version", p.label("version", "unknown")}, {"source_cluster", "Kubernetes"},
			{"destination_workload", unknownUnless(k.upstreamApp)}, {"destination_workload_namespace", unknownUnless(k.namespace)},
			{"destination_principal", unknownUnless(fmt.Sprintf("spiffe://%s/ns/%s/sa/%s", meshDomain, k.namespace, k.upstreamApp))},
			{"destination_app", unknownUnless(k.upstreamApp)}, {"destination_version", unknownUnless("v1")},
			{"destination_service", destinationService},
			{"destination_canonical_service", unknownUnless(k.upstreamApp)}, {"destination_canonical_revision", canonicalRevision},
			{"destination_service_name", k.service}, {"destination_service_namespace", destinationNamespace}, {"destination_cluster", destinationCluster},
			{"request_protocol", protocol}, {"response_code", strconv.Itoa(k.code)}, {"grpc_response_status", ""}, {"response_flags", k.flags},
			{"connection_security_policy", "unknown"},
		}
		pairs := make([]string, len(labels))
		for i, l := range labels {
			pairs[i] = fmt.Sprintf(`%s="%s"`, l.Key, l.Value)
		}
		out = append(out, fmt.Sprintf("istio_requests_total{%s} %d", strings.Join(pairs, ","), counts[k]))
	}
	out = append(out, "# TYPE envoy_cluster_upstream_cx_connect_fail counter")
	for _, c := range sc.Clusters {
		if c.isOutboundEDS() {
			n := c.stat("cx_connect_fail", c.hostSum(func(h *Host) int { return h.CxConnectFail }))
			out = append(out, fmt.Sprintf(`envoy_cluster_upstream_cx_connect_fail{cluster_name="%s"} %d`, c.Name, n))
		}
	}
	out = append(out, "# TYPE envoy_cluster_upstream_rq_pending_overflow counter")
	for _, c := range sc.Clusters {
		if c.isOutboundEDS() {
			out = append(out, fmt.Sprintf(`envoy_cluster_upstream_rq_pending_overflow{cluster_name="%s"} %d`, c.Name, c.stat("rq_pending_overflow", 0)))
		}
	}
	return strings.Join(out, "\n") + "\n"
}
