package lab

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	internalupstreamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// PushedCluster is one outbound cluster as istiod pushed it to a caller:
// what the config model's clusters are compared with.
type PushedCluster struct {
	Name   string // outbound|PORT|SUBSET|HOST
	Port   int32
	Subset string
	Host   string
	Type   string // EDS, STRICT_DNS, ORIGINAL_DST, ...
	// Endpoints are the cluster's hosts with what the caller's Envoy does
	// with each; an EDS cluster whose endpoints have not arrived has none.
	Endpoints []PushedEndpoint
	// Sends is what the caller's Envoy sends to an endpoint that carries
	// no metadata: to every host of an ORIGINAL_DST cluster (a headless
	// Service's), which Envoy connects to at the address the app asked
	// for, without endpoints from istiod.
	Sends, SendsWhy string
}

// PushedEndpoint is one host of a pushed cluster.
type PushedEndpoint struct {
	Address string
	Port    uint32
	// Health is the EDS health istiod sent (HEALTHY, UNHEALTHY, DRAINING,
	// UNKNOWN when it sent none).
	Health string
	// Serving: Envoy balances requests to it (HEALTHY, UNKNOWN, DEGRADED).
	Serving bool
	// Sends is what the caller's Envoy puts on the wire to it, in the
	// model's terms (mesh.SendsMTLS, SendsPlaintext, SendsTLS), from the
	// transport socket Envoy picks for it; SendsWhy names that socket.
	Sends, SendsWhy string
	// TLSMode is the tlsMode of the endpoint's transport socket match
	// metadata ("" when it has none).
	TLSMode string
	// Workload is the telemetry metadata istiod sends with the endpoint
	// (istio.workload: workload;namespace;canonical name;canonical
	// revision;cluster).
	Workload string
	// Locality is its locality's region/zone/subzone.
	Locality string
}

// Key is ADDRESS:PORT.
func (e PushedEndpoint) Key() string {
	return e.Address + ":" + strconv.FormatUint(uint64(e.Port), 10)
}

// Pushed returns the outbound clusters the client holds (applied and
// ACKed), by name, each with its endpoints and the TLS its Envoy would
// send them.
func (c *XDSClient) Pushed() map[string]*PushedCluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*PushedCluster{}
	for _, r := range c.types[ClusterType].Resources {
		cl := r.Message.(*clusterv3.Cluster)
		parts := strings.Split(cl.GetName(), "|")
		if len(parts) != 4 || parts[0] != "outbound" {
			continue
		}
		port, _ := strconv.ParseInt(parts[1], 10, 32)
		pc := &PushedCluster{Name: cl.GetName(), Port: int32(port), Subset: parts[2], Host: parts[3], Type: cl.GetType().String()}
		pc.Sends, pc.SendsWhy = endpointSends(cl, &endpointv3.LbEndpoint{}, &endpointv3.LocalityLbEndpoints{})
		var cla *endpointv3.ClusterLoadAssignment
		switch cl.GetType() {
		case clusterv3.Cluster_EDS:
			if res := c.types[EndpointType].Resources[edsServiceName(cl)]; res != nil {
				cla = res.Message.(*endpointv3.ClusterLoadAssignment)
			}
		default:
			cla = cl.GetLoadAssignment()
		}
		for _, le := range cla.GetEndpoints() {
			for _, lb := range le.GetLbEndpoints() {
				addr, port, tunnelled := endpointAddress(lb)
				if addr == "" {
					continue
				}
				health := lb.GetHealthStatus()
				sends, why := endpointSends(cl, lb, le)
				if tunnelled {
					sends, why = hboneSends(sends, why)
				}
				md := lb.GetMetadata().GetFilterMetadata()
				loc := le.GetLocality()
				pc.Endpoints = append(pc.Endpoints, PushedEndpoint{
					Address:  addr,
					Port:     port,
					Health:   health.String(),
					Serving:  health == corev3.HealthStatus_HEALTHY || health == corev3.HealthStatus_UNKNOWN || health == corev3.HealthStatus_DEGRADED,
					Sends:    sends,
					SendsWhy: why,
					TLSMode:  md[transportSocketMatchKey].GetFields()["tlsMode"].GetStringValue(),
					Workload: md["istio"].GetFields()["workload"].GetStringValue(),
					Locality: loc.GetRegion() + "/" + loc.GetZone() + "/" + loc.GetSubZone(),
				})
			}
		}
		sort.Slice(pc.Endpoints, func(i, j int) bool { return pc.Endpoints[i].Key() < pc.Endpoints[j].Key() })
		out[pc.Name] = pc
	}
	return out
}

// originalDstKey is the filter metadata where istiod puts the address an
// HBONE tunnel carries the connection to (util.OriginalDstMetadataKey).
const originalDstKey = "envoy.filters.listener.original_dst"

// endpointAddress is the pod address an endpoint reaches: its socket
// address, or, for an endpoint istiod sends through an HBONE tunnel (an
// internal address of the connect_originate listener, as a sidecar gets
// for an ambient pod when ambient is on), the address the tunnel's
// metadata names.
func endpointAddress(lb *endpointv3.LbEndpoint) (addr string, port uint32, tunnelled bool) {
	a := lb.GetEndpoint().GetAddress()
	if sa := a.GetSocketAddress(); sa != nil {
		return sa.GetAddress(), sa.GetPortValue(), false
	}
	if a.GetEnvoyInternalAddress() == nil {
		return "", 0, false
	}
	local := lb.GetMetadata().GetFilterMetadata()[originalDstKey].GetFields()["local"].GetStringValue()
	host, p, err := net.SplitHostPort(local)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.ParseUint(p, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return host, uint32(n), true
}

// hboneSends is what a tunnelled endpoint is sent: HBONE is mTLS between
// the proxies, and what rides inside it is the cluster's inner transport
// (TLS a DestinationRule originates stays TLS to the app).
func hboneSends(inner, why string) (string, string) {
	if inner == mesh.SendsTLS {
		return inner, why + ", tunnelled in HBONE"
	}
	return mesh.SendsMTLS, "HBONE to the pod's ztunnel (connect_originate), inner " + why
}

// transportSocketMatchKey is the filter metadata Envoy matches a cluster's
// transport_socket_matches against: istiod puts tlsMode there.
const transportSocketMatchKey = "envoy.transport_socket_match"

// endpointSends is what Envoy sends to lb: the transport socket of the
// first of the cluster's transport_socket_matches whose match the
// endpoint's (else its locality's) metadata satisfies, else the cluster's
// transport_socket, else plaintext.
func endpointSends(cl *clusterv3.Cluster, lb *endpointv3.LbEndpoint, le *endpointv3.LocalityLbEndpoints) (string, string) {
	for _, md := range []*structpb.Struct{
		lb.GetMetadata().GetFilterMetadata()[transportSocketMatchKey],
		le.GetMetadata().GetFilterMetadata()[transportSocketMatchKey],
	} {
		for _, m := range cl.GetTransportSocketMatches() {
			if structCovers(md, m.GetMatch()) {
				return transportSends(m.GetTransportSocket(), "transport_socket_matches "+m.GetName())
			}
		}
	}
	if ts := cl.GetTransportSocket(); ts != nil {
		return transportSends(ts, "transport_socket")
	}
	return mesh.SendsPlaintext, "no transport socket"
}

// structCovers reports whether every field of match is in md with the
// same value (an empty match covers anything).
func structCovers(md, match *structpb.Struct) bool {
	for k, v := range match.GetFields() {
		got, ok := md.GetFields()[k]
		if !ok || !proto.Equal(got, v) {
			return false
		}
	}
	return true
}

// transportSends reads a transport socket: TLS with Istio's workload
// certificate (SDS "default") validated against Istio's root (SDS
// "ROOTCA") is Istio mTLS; other TLS is TLS the DestinationRule
// originates; raw_buffer is plaintext. An internal upstream socket is read
// through to the socket it wraps.
func transportSends(ts *corev3.TransportSocket, why string) (string, string) {
	tc := ts.GetTypedConfig()
	switch {
	case tc == nil:
		return mesh.SendsPlaintext, why + " (" + ts.GetName() + ", no config)"
	case tc.MessageIs(&internalupstreamv3.InternalUpstreamTransport{}):
		var iu internalupstreamv3.InternalUpstreamTransport
		if err := tc.UnmarshalTo(&iu); err == nil {
			return transportSends(iu.GetTransportSocket(), why+" (internal upstream)")
		}
	case tc.MessageIs(&rawbufferv3.RawBuffer{}):
		return mesh.SendsPlaintext, why + " (raw_buffer)"
	case tc.MessageIs(&tlsv3.UpstreamTlsContext{}):
		var up tlsv3.UpstreamTlsContext
		if err := tc.UnmarshalTo(&up); err != nil {
			break
		}
		ctx := up.GetCommonTlsContext()
		workloadCert := false
		for _, s := range ctx.GetTlsCertificateSdsSecretConfigs() {
			workloadCert = workloadCert || s.GetName() == "default"
		}
		istioRoot := ctx.GetCombinedValidationContext().GetValidationContextSdsSecretConfig().GetName() == "ROOTCA" ||
			ctx.GetValidationContextSdsSecretConfig().GetName() == "ROOTCA"
		if workloadCert && istioRoot {
			return mesh.SendsMTLS, why + " (Istio mTLS: SDS default, ROOTCA)"
		}
		return mesh.SendsTLS, why + " (TLS, not Istio's certificates)"
	}
	return "unknown", why + " (" + tc.GetTypeUrl() + ")"
}

// Comparison is the config model's view of a Service port set against
// what istiod pushed to the same caller.
type Comparison struct {
	// Clusters and Endpoints count what was compared: clusters both sides
	// name, and serving endpoints either side has.
	Clusters, Endpoints int
	// Diffs say, in words, where the two disagree.
	Diffs []string
}

// CompareView compares the config model's view v with what istiod pushed:
// a cluster one has and the other has not, an endpoint one counts serving
// and the other does not, and the TLS sent to each serving endpoint. A
// caller without a sidecar gets nothing from istiod and a ServiceEntry's
// endpoints are not modelled: neither is compared.
func CompareView(v *mesh.View, pushed map[string]*PushedCluster) Comparison {
	var c Comparison
	if !v.Caller.Sidecar {
		return c
	}
	main := mesh.ClusterName(v.Port, "", v.Host)
	if !v.Visibility.Visible {
		if v.Visibility.Imported != "" {
			return c // CompareSubsets compares the clusters an imported route destination has
		}
		c.Clusters++
		if pc := pushed[main]; pc != nil {
			c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model hides %s from the caller (%s); istiod pushed the cluster with %d endpoints",
				main, v.Host, v.Visibility.HiddenBy, len(pc.Endpoints)))
		}
		return c
	}
	names := make([]string, 0, len(v.Clusters))
	for name := range v.Clusters {
		if strings.HasPrefix(name, "outbound|") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		c.add(compareCluster(name, v.Clusters[name], pushed[name]))
	}
	return c
}

func (c *Comparison) add(o Comparison) {
	c.Clusters += o.Clusters
	c.Endpoints += o.Endpoints
	c.Diffs = append(c.Diffs, o.Diffs...)
}

// compareCluster compares one cluster of the model with what istiod
// pushed of that name (nil: none).
func compareCluster(name string, mc *mesh.Cluster, pc *PushedCluster) Comparison {
	c := Comparison{Clusters: 1}
	switch {
	case mc.ExistsUnknown != "":
	case mc.Exists && pc == nil:
		c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says istiod builds it; istiod pushed no such cluster", name))
	case !mc.Exists && pc != nil:
		c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says istiod builds no such cluster (%s); istiod pushed it with %d endpoints", name, mc.Why, len(pc.Endpoints)))
	case mc.Exists && !mc.External:
		n, diffs := compareEndpoints(name, mc, pc)
		c.Endpoints += n
		c.Diffs = append(c.Diffs, diffs...)
	}
	return c
}

// CompareSubsets compares the clusters istiod builds the caller for the
// view's host and port that no route names: the Service's own cluster and
// one for each subset of the DestinationRule that applies, each with its
// endpoints; and it requires that istiod pushed no other cluster of that
// host and port. Only for a sidecar caller that sees the Service, or
// whose scope imports it as a route destination (Visibility.Imported).
func CompareSubsets(cfg *mesh.Config, v *mesh.View, pushed map[string]*PushedCluster) Comparison {
	var c Comparison
	if !v.Caller.Sidecar || v.Caller.Gateway || v.Caller.Ambient || mesh.ExternalNameOf(v.Service) != "" ||
		!v.Visibility.Visible && v.Visibility.Imported == "" {
		return c
	}
	known := map[string]bool{}
	subsets := []string{""}
	if v.Rule != nil {
		for _, s := range v.Rule.Subsets {
			subsets = append(subsets, s.GetName())
		}
	}
	for _, s := range subsets {
		name := mesh.ClusterName(v.Port, s, v.Host)
		if known[name] {
			continue
		}
		known[name] = true
		if _, routed := v.Clusters[name]; routed {
			continue // CompareView compared it
		}
		c.add(compareCluster(name, cfg.SubsetCluster(v.Caller, v.Host, v.Port, s), pushed[name]))
	}
	prefix := fmt.Sprintf("outbound|%d|", v.Port)
	for _, name := range sortedKeysOf(pushed) {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, "|"+v.Host) && !known[name] && v.Clusters[name] == nil {
			c.Clusters++
			c.Diffs = append(c.Diffs, fmt.Sprintf("%s: istiod pushed it with %d endpoints; the model knows no such subset of %s", name, len(pushed[name].Endpoints), v.Host))
		}
	}
	return c
}

func compareEndpoints(name string, mc *mesh.Cluster, pc *PushedCluster) (int, []string) {
	if pc.Type == clusterv3.Cluster_ORIGINAL_DST.String() {
		return compareOriginalDst(name, mc, pc)
	}
	model := map[string]mesh.EndpointTLS{}
	for _, e := range mc.Endpoints {
		if e.Serving() {
			model[fmt.Sprintf("%s:%d", e.Address, e.Port)] = e
		}
	}
	pushed := map[string]PushedEndpoint{}
	all := map[string]PushedEndpoint{}
	for _, e := range pc.Endpoints {
		all[e.Key()] = e
		if e.Serving {
			pushed[e.Key()] = e
		}
	}
	var out []string
	for _, k := range sortedKeysOf(model) {
		m := model[k]
		e, ok := pushed[k]
		switch {
		case !ok && all[k].Health != "":
			out = append(out, fmt.Sprintf("%s: endpoint %s serves in the model; istiod pushed it %s", name, k, all[k].Health))
		case !ok:
			out = append(out, fmt.Sprintf("%s: endpoint %s serves in the model; istiod pushed no such endpoint", name, k))
		case e.Sends != m.Sends:
			out = append(out, fmt.Sprintf("%s: endpoint %s: the model sends %s (%s); the caller's Envoy sends %s (%s)", name, k, m.Sends, m.SendsWhy, e.Sends, e.SendsWhy))
		}
		if ok {
			out = append(out, compareEndpointMetadata(name, k, m, e)...)
		}
	}
	compared := len(model)
	var extra []string
	for _, k := range sortedKeysOf(pushed) {
		if _, ok := model[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(extra) <= mc.Undecided {
		// The model said it could not tell whether that many serve (a
		// gateway it did not read, a pod it does not know): not a
		// difference; the model of a full read is compared apart.
		return compared, out
	}
	for _, k := range extra {
		compared++
		out = append(out, fmt.Sprintf("%s: endpoint %s: istiod pushed it %s; the model does not count it serving", name, k, pushed[k].Health))
	}
	return compared, out
}

// compareEndpointMetadata compares what istiod sends with an endpoint
// besides its address: the tlsMode auto mTLS matches on, the telemetry
// workload, the locality. An endpoint whose pod the model does not know
// has none of them predicted, nor one whose node was not read its
// locality.
func compareEndpointMetadata(name, key string, m mesh.EndpointTLS, e PushedEndpoint) []string {
	if m.PodUnknown != "" {
		return nil
	}
	var out []string
	if m.TLSMode != e.TLSMode {
		out = append(out, fmt.Sprintf("%s: endpoint %s: the model's EDS tlsMode is %q; istiod sent %q", name, key, m.TLSMode, e.TLSMode))
	}
	if want := ModelWorkload(m.Endpoint); want != e.Workload {
		out = append(out, fmt.Sprintf("%s: endpoint %s: the model's workload metadata is %q; istiod sent %q", name, key, want, e.Workload))
	}
	if want := m.Labels[mesh.LabelRegion] + "/" + m.Labels[mesh.LabelZone] + "/" + m.Labels[mesh.LabelSubzone]; len(m.LabelsUnknown) == 0 && want != e.Locality {
		out = append(out, fmt.Sprintf("%s: endpoint %s: the model's locality is %q; istiod sent %q", name, key, want, e.Locality))
	}
	return out
}

// ModelWorkload is the istio.workload metadata the model's endpoint e
// carries: workload;namespace;canonical name;canonical revision;cluster,
// the revision left empty when it is Istio's default "latest"
// (AppendLbEndpointMetadata).
func ModelWorkload(e mesh.Endpoint) string {
	canonical, revision := mesh.CanonicalService(e.Labels, e.Workload)
	if revision == "latest" {
		revision = ""
	}
	cluster := e.Labels[mesh.LabelCluster]
	return strings.Join([]string{e.Workload, e.Namespace, canonical, revision, cluster}, ";")
}

// compareOriginalDst compares a cluster istiod pushes as ORIGINAL_DST (a
// headless Service's): Envoy connects to whatever address the app asked
// for, so istiod sends no endpoints; what goes to each of the model's
// serving endpoints is the cluster's own transport socket.
func compareOriginalDst(name string, mc *mesh.Cluster, pc *PushedCluster) (int, []string) {
	var out []string
	n := 0
	for _, e := range mc.Endpoints {
		if !e.Serving() {
			continue
		}
		n++
		if e.Sends != pc.Sends {
			out = append(out, fmt.Sprintf("%s (ORIGINAL_DST): endpoint %s:%d: the model sends %s (%s); the caller's Envoy sends %s (%s)", name, e.Address, e.Port, e.Sends, e.SendsWhy, pc.Sends, pc.SendsWhy))
		}
	}
	return n, out
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
