package envoy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TLS modes of an upstream cluster, as config_tls reports them.
const (
	// TLSIstioMutual: a plain transport_socket originating TLS with Istio's
	// workload certificate (SDS "default") and mesh root (SDS "ROOTCA"):
	// a DestinationRule with tls.mode ISTIO_MUTUAL.
	TLSIstioMutual = "istio-mtls"
	// TLSAuto: transport_socket_matches sending Istio mTLS to endpoints
	// labelled tlsMode=istio and plaintext to the rest: auto mTLS, no DR TLS.
	TLSAuto = "auto"
	// TLSOrigination: TLS with other certificates (or none): a DestinationRule
	// with tls.mode SIMPLE or MUTUAL.
	TLSOrigination = "tls"
	// TLSNone: plaintext (no transport socket, or raw_buffer): DR tls DISABLE,
	// or auto mTLS turned off.
	TLSNone = "none"
	// TLSUnknown: a transport socket whose type this build cannot read (an
	// extension, or internal_upstream wrapping another socket). Never
	// reported as none: that would be a guess.
	TLSUnknown = "unknown"
)

// Istio's SDS resource names for the workload certificate and the mesh
// trust bundle (pilot/pkg/model/authentication.go SDSDefaultResourceName,
// SDSRootResourceName).
const (
	sdsDefault = "default"
	sdsRootCA  = "ROOTCA"
)

// TypeURL prefix of every Any in a config dump.
const typePrefix = "type.googleapis.com/"

var (
	upstreamTLSURL = typePrefix + string((&tlsv3.UpstreamTlsContext{}).ProtoReflect().Descriptor().FullName())
	rawBufferURL   = typePrefix + string((&rawbufferv3.RawBuffer{}).ProtoReflect().Descriptor().FullName())
	httpOptionsKey = string((&httpv3.HttpProtocolOptions{}).ProtoReflect().Descriptor().FullName())
)

// ClusterConfig is what a probe needs from one cluster of a config dump.
type ClusterConfig struct {
	Name    string
	Warming bool   // dynamic_warming_clusters: received, waiting for its endpoints
	Type    string // EDS, STRICT_DNS, ORIGINAL_DST, ...

	TLS       string // one of the TLS* constants
	TLSDetail string // why, for the evidence
	SNI       string

	OutlierDetection bool // outlier_detection is configured at all
	// Consecutive5xx is how many 5xx in a row eject a host: consecutive_5xx
	// (Envoy's default 5 when unset), 0 when enforcing_consecutive_5xx is 0,
	// which is how Istio turns it off when a DestinationRule sets only
	// gateway errors.
	Consecutive5xx int
	// ConsecutiveGatewayFailure is how many 502/503/504 (and connect
	// failures) in a row eject a host: consecutive_gateway_failure (default
	// 5), 0 unless enforcing_consecutive_gateway_failure is set, as Istio
	// sets it for consecutiveGatewayErrors and for the old consecutiveErrors.
	ConsecutiveGatewayFailure int
	MaxEjectionPercent        int // 0 when unset
	BaseEjectionTime          time.Duration

	// Circuit breaker thresholds of the DEFAULT priority; 0 when unset.
	// Istio writes 4294967295 (no limit) where a DestinationRule sets none.
	MaxConnections     int64
	MaxPendingRequests int64
	MaxRequests        int64
	MaxRetries         int64

	IdleTimeout    time.Duration // upstream HTTP idle_timeout; 0 when unset
	ConnectTimeout time.Duration
}

// Unlimited is the threshold Istio writes for "no limit" (max uint32).
const Unlimited = 1<<32 - 1

// AnalyzeCluster reads c.
func AnalyzeCluster(c *clusterv3.Cluster) ClusterConfig {
	cc := ClusterConfig{Name: c.GetName(), Type: c.GetType().String()}
	if c.GetClusterType() != nil {
		cc.Type = c.GetClusterType().GetName()
	}
	cc.TLS, cc.TLSDetail, cc.SNI = clusterTLS(c)

	if od := c.GetOutlierDetection(); od != nil {
		cc.OutlierDetection = true
		cc.Consecutive5xx = enforced(od.GetConsecutive_5Xx(), 5, od.GetEnforcingConsecutive_5Xx(), 100)
		cc.ConsecutiveGatewayFailure = enforced(od.GetConsecutiveGatewayFailure(), 5, od.GetEnforcingConsecutiveGatewayFailure(), 0)
		cc.MaxEjectionPercent = int(od.GetMaxEjectionPercent().GetValue())
		cc.BaseEjectionTime = od.GetBaseEjectionTime().AsDuration()
	}
	for _, th := range c.GetCircuitBreakers().GetThresholds() {
		if th.GetPriority() != corev3.RoutingPriority_DEFAULT {
			continue
		}
		cc.MaxConnections = int64(th.GetMaxConnections().GetValue())
		cc.MaxPendingRequests = int64(th.GetMaxPendingRequests().GetValue())
		cc.MaxRequests = int64(th.GetMaxRequests().GetValue())
		cc.MaxRetries = int64(th.GetMaxRetries().GetValue())
		break
	}
	cc.IdleTimeout = idleTimeout(c)
	cc.ConnectTimeout = c.GetConnectTimeout().AsDuration()
	return cc
}

// enforced is an outlier detection threshold as Envoy applies it: the
// threshold (its default when unset) when the enforcing percentage (its
// default when unset) is above 0, else 0: that kind of ejection is off.
func enforced(threshold *wrapperspb.UInt32Value, thresholdDefault uint32, enforcing *wrapperspb.UInt32Value, enforcingDefault uint32) int {
	e := enforcingDefault
	if enforcing != nil {
		e = enforcing.GetValue()
	}
	if e == 0 {
		return 0
	}
	if threshold == nil {
		return int(thresholdDefault)
	}
	return int(threshold.GetValue())
}

// clusterTLS classifies what the cluster originates. Istio's cluster builder
// (pilot/pkg/networking/core/cluster_tls.go applyUpstreamTLSSettings) puts a
// DestinationRule's TLS in transport_socket, and only for auto-detected
// ISTIO_MUTUAL moves it into transport_socket_matches keyed on the
// endpoint's tlsMode=istio label, next to a plaintext default match.
func clusterTLS(c *clusterv3.Cluster) (mode, detail, sni string) {
	if ms := c.GetTransportSocketMatches(); len(ms) > 0 {
		var fallback *corev3.TransportSocket
		for _, m := range ms {
			if m.GetMatch().GetFields()["tlsMode"].GetStringValue() == "istio" {
				kind, d, s := transportSocketTLS(m.GetTransportSocket())
				if kind == TLSIstioMutual {
					return TLSAuto, "transport_socket_matches " + m.GetName() + ": tlsMode=istio -> " + d, s
				}
				return kind, "transport_socket_matches " + m.GetName() + ": tlsMode=istio -> " + d, s
			}
			if len(m.GetMatch().GetFields()) == 0 {
				fallback = m.GetTransportSocket()
			}
		}
		kind, d, s := transportSocketTLS(fallback)
		return kind, "transport_socket_matches without tlsMode=istio; default -> " + d, s
	}
	return transportSocketTLS(c.GetTransportSocket())
}

func transportSocketTLS(ts *corev3.TransportSocket) (mode, detail, sni string) {
	if ts == nil {
		return TLSNone, "no transport socket (plaintext)", ""
	}
	cfg := ts.GetTypedConfig()
	switch {
	case cfg == nil:
		return TLSUnknown, fmt.Sprintf("transport socket %q without typed_config", ts.GetName()), ""
	case cfg.GetTypeUrl() == rawBufferURL:
		return TLSNone, "raw_buffer (plaintext)", ""
	case cfg.GetTypeUrl() != upstreamTLSURL:
		return TLSUnknown, fmt.Sprintf("transport socket %q of type %s not inspected", ts.GetName(), shortType(cfg.GetTypeUrl())), ""
	}
	var tc tlsv3.UpstreamTlsContext
	if err := anypb.UnmarshalTo(cfg, &tc, defaultUnmarshal); err != nil {
		return TLSUnknown, "UpstreamTlsContext unreadable: " + err.Error(), ""
	}
	common := tc.GetCommonTlsContext()
	var certs []string
	for _, s := range common.GetTlsCertificateSdsSecretConfigs() {
		certs = append(certs, s.GetName())
	}
	root := common.GetValidationContextSdsSecretConfig().GetName()
	if root == "" {
		root = common.GetCombinedValidationContext().GetValidationContextSdsSecretConfig().GetName()
	}
	sni = tc.GetSni()
	if contains(certs, sdsDefault) && root == sdsRootCA {
		return TLSIstioMutual, "TLS with Istio certificates (SDS default, ROOTCA)", sni
	}
	d := "TLS origination"
	switch {
	case len(certs) > 0:
		d += " with client certificate " + strings.Join(certs, ",")
	case len(common.GetTlsCertificates()) > 0:
		d += " with client certificate files"
	default:
		d += " without client certificate"
	}
	if root != "" {
		d += ", CA " + root
	}
	return TLSOrigination, d, sni
}

// idleTimeout reads the upstream HTTP idle_timeout Istio writes into
// typed_extension_protocol_options (older releases: the deprecated
// common_http_protocol_options of the cluster).
func idleTimeout(c *clusterv3.Cluster) time.Duration {
	if a := c.GetTypedExtensionProtocolOptions()[httpOptionsKey]; a != nil {
		var o httpv3.HttpProtocolOptions
		if err := anypb.UnmarshalTo(a, &o, defaultUnmarshal); err == nil && o.GetCommonHttpProtocolOptions().GetIdleTimeout() != nil {
			return o.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration()
		}
	}
	//nolint:staticcheck // Istio before 1.9 still wrote the deprecated field.
	if d := c.GetCommonHttpProtocolOptions().GetIdleTimeout(); d != nil {
		return d.AsDuration()
	}
	return 0
}

// Endpoints is one cluster's endpoints from an EndpointsConfigDump
// (config_dump?include_eds).
type Endpoints struct {
	Cluster string
	Total   int
	Healthy int // HEALTHY or UNKNOWN
	// TLSModeIstio counts endpoints labelled tlsMode=istio: the ones auto
	// mTLS sends mTLS to.
	TLSModeIstio int
	Addresses    []string
}

// AnalyzeEndpoints reads one ClusterLoadAssignment.
func AnalyzeEndpoints(cla *endpointv3.ClusterLoadAssignment) Endpoints {
	e := Endpoints{Cluster: cla.GetClusterName()}
	for _, l := range cla.GetEndpoints() {
		for _, lb := range l.GetLbEndpoints() {
			e.Total++
			switch lb.GetHealthStatus() {
			case corev3.HealthStatus_HEALTHY, corev3.HealthStatus_UNKNOWN:
				e.Healthy++
			}
			if lb.GetMetadata().GetFilterMetadata()["envoy.transport_socket_match"].GetFields()["tlsMode"].GetStringValue() == "istio" {
				e.TLSModeIstio++
			}
			e.Addresses = append(e.Addresses, AddressString(lb.GetEndpoint().GetAddress()))
		}
	}
	sort.Strings(e.Addresses)
	return e
}

func shortType(url string) string {
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		return url[i+1:]
	}
	return url
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}
