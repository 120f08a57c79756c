package envoy

import (
	"bytes"
	"fmt"
	"net"
	"strconv"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// Cluster is one cluster of /clusters?format=json with its hosts as Envoy
// sees them right now.
type Cluster struct {
	Name        string
	AddedViaAPI bool
	Hosts       []Host
}

// Host is one upstream host of a cluster.
type Host struct {
	Address string // ip:port, or a pipe/internal address as Envoy names it
	// FailedOutlierCheck: outlier detection ejected the host.
	FailedOutlierCheck bool
	// FailedActiveHealthCheck: an active health check (rare in Istio,
	// which relies on Kubernetes readiness) failed.
	FailedActiveHealthCheck bool
	// EDSHealth is the health istiod sent: HEALTHY, UNHEALTHY, DRAINING,
	// TIMEOUT, DEGRADED or UNKNOWN.
	EDSHealth string
	// PendingRemoval: istiod removed the host; Envoy keeps it until its
	// connections drain.
	PendingRemoval bool
	// The flags of active health checking (a DestinationRule cannot set
	// one; an EnvoyFilter, a ServiceEntry's or a gateway's own clusters,
	// or a non-Istio control plane can). What Envoy does with each
	// (source/common/upstream/upstream_impl.cc, health_checker_impl.cc):
	// PendingActiveHC: added while health checking is on and not checked
	// yet; excluded from load balancing until its first check
	// (excludeBasedOnHealthFlag).
	PendingActiveHC bool
	// ExcludedViaImmediateHCFail: answered a health check with
	// x-envoy-immediate-health-check-fail; excluded from load balancing.
	ExcludedViaImmediateHCFail bool
	// ActiveHCTimeout: its active health checks fail by timing out (set
	// only while the host fails them).
	ActiveHCTimeout bool
	// DegradedActiveHC (failed_active_degraded_check, /degraded_active_hc)
	// and DegradedOutlier (failed_degraded_outlier_detection): degraded,
	// sent requests only when too few hosts are healthy.
	DegradedActiveHC, DegradedOutlier bool
	Weight                            uint32
	// Stats are the host's counters and gauges (cx_connect_fail, rq_error,
	// rq_timeout, cx_active, rq_total, ...). Envoy omits zeros.
	Stats map[string]uint64
}

// EDSUnhealthy reports an EDS status that takes the host out of load
// balancing: UNHEALTHY, DRAINING, TIMEOUT. UNKNOWN is how Envoy treats a
// host without a status, healthy; DEGRADED is degraded (Degraded).
func (h Host) EDSUnhealthy() bool {
	switch h.EDSHealth {
	case "", corev3.HealthStatus_HEALTHY.String(), corev3.HealthStatus_UNKNOWN.String(), corev3.HealthStatus_DEGRADED.String():
		return false
	}
	return true
}

// Unhealthy reports a host Envoy sends no request to: failing health
// checks or ejected (coarseHealth Unhealthy), or excluded from load
// balancing (pending its first health check, or failed immediately).
func (h Host) Unhealthy() bool {
	return h.FailedOutlierCheck || h.FailedActiveHealthCheck || h.ActiveHCTimeout || h.PendingActiveHC ||
		h.ExcludedViaImmediateHCFail || h.EDSUnhealthy()
}

// Degraded reports a host Envoy sends requests to only when too few
// hosts are healthy (coarseHealth Degraded).
func (h Host) Degraded() bool {
	return !h.Unhealthy() && (h.DegradedActiveHC || h.DegradedOutlier || h.EDSHealth == corev3.HealthStatus_DEGRADED.String())
}

// Healthy reports a host Envoy sends its share of requests to: neither
// unhealthy nor degraded.
func (h Host) Healthy() bool { return !h.Unhealthy() && !h.Degraded() }

// Routable reports a host Envoy may send requests to: healthy, or
// degraded (which takes traffic when the healthy ones do not suffice).
func (h Host) Routable() bool { return !h.Unhealthy() }

// ParseClusters decodes /clusters?format=json, or the plain-text /clusters
// an Envoy (or pilot-agent request) that ignored ?format=json answered
// with. Cluster names are normalised (package clustername).
func ParseClusters(data []byte) ([]Cluster, error) {
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] != '{' {
		return ParseClustersText(data)
	}
	var cs adminv3.Clusters
	if err := tolerant(nil).Unmarshal(data, &cs); err != nil {
		return nil, fmt.Errorf("clusters?format=json: %w", err)
	}
	out := make([]Cluster, 0, len(cs.GetClusterStatuses()))
	for _, c := range cs.GetClusterStatuses() {
		cl := Cluster{Name: clustername.Name(c.GetName()), AddedViaAPI: c.GetAddedViaApi()}
		for _, h := range c.GetHostStatuses() {
			hs := h.GetHealthStatus()
			host := Host{
				Address:                 AddressString(h.GetAddress()),
				FailedOutlierCheck:      hs.GetFailedOutlierCheck(),
				FailedActiveHealthCheck: hs.GetFailedActiveHealthCheck(),
				EDSHealth:               hs.GetEdsHealthStatus().String(),
				PendingRemoval:          hs.GetPendingDynamicRemoval(),
				PendingActiveHC:         hs.GetPendingActiveHc(),
				ActiveHCTimeout:         hs.GetActiveHcTimeout(),
				DegradedActiveHC:        hs.GetFailedActiveDegradedCheck(),
				DegradedOutlier:         hs.GetFailedDegradedOutlierDetection(),

				ExcludedViaImmediateHCFail: hs.GetExcludedViaImmediateHcFail(),
				Weight:                     h.GetWeight(),
				Stats:                      map[string]uint64{},
			}
			for _, s := range h.GetStats() {
				host.Stats[s.GetName()] = s.GetValue()
			}
			cl.Hosts = append(cl.Hosts, host)
		}
		out = append(out, cl)
	}
	return out, nil
}

// AddressString renders an Envoy address as ip:port (or the pipe path or
// internal listener name).
func AddressString(a *corev3.Address) string {
	switch {
	case a.GetSocketAddress() != nil:
		sa := a.GetSocketAddress()
		return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
	case a.GetPipe() != nil:
		return a.GetPipe().GetPath()
	case a.GetEnvoyInternalAddress() != nil:
		// As Envoy prints it: envoy://connect_originate/10.244.1.7:8080
		// for an HBONE tunnel to that pod.
		ia := a.GetEnvoyInternalAddress()
		if id := ia.GetEndpointId(); id != "" {
			return "envoy://" + ia.GetServerListenerName() + "/" + id
		}
		return "envoy://" + ia.GetServerListenerName()
	}
	return ""
}
