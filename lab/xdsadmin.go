package lab

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// AdminHandler serves the Envoy admin reads of the proxy c plays, built
// from the xDS it applied, in the shapes Envoy's admin writes them
// (admin/v3 messages as JSON with proto field names):
//
//   - /config_dump: bootstrap (the node), clusters (active, and warming
//     while an EDS cluster waits for its endpoints), listeners, routes;
//     endpoints only with ?include_eds, as Envoy does;
//   - /clusters?format=json: every dynamic cluster with its hosts, their EDS
//     health as Envoy reports it, weight, locality and priority, and the
//     circuit breaker thresholds;
//   - /listeners?format=json: every listener's name and address.
//
// An Envoy that ran traffic has counters; this one has none, so /stats and
// the plain-text formats are not served (404, as Envoy answers a path it
// does not know). STRICT_DNS clusters show no hosts: the lab resolves no
// DNS, like an Envoy whose first resolution has not completed.
func (c *XDSClient) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config_dump", func(w http.ResponseWriter, r *http.Request) {
		_, eds := r.URL.Query()["include_eds"]
		writeAdminJSON(w, c.ConfigDump(eds))
	})
	mux.HandleFunc("GET /clusters", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") != "json" {
			http.Error(w, "the lab's Envoy serves /clusters?format=json only", http.StatusNotFound)
			return
		}
		writeAdminJSON(w, c.Clusters())
	})
	mux.HandleFunc("GET /listeners", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") != "json" {
			http.Error(w, "the lab's Envoy serves /listeners?format=json only", http.StatusNotFound)
			return
		}
		writeAdminJSON(w, c.Listeners())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "the lab's Envoy admin is read-only", http.StatusMethodNotAllowed)
			return
		}
		http.Error(w, "invalid path: "+r.URL.Path, http.StatusNotFound)
	})
	return mux
}

func writeAdminJSON(w http.ResponseWriter, m proto.Message) {
	b, err := AdminJSON(m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// AdminJSON writes m as Envoy's admin does: proto field names, fields in
// proto order, indented by one space. A typed config whose type this build
// does not link (Istio's own filters) keeps its @type and loses its fields.
func AdminJSON(m proto.Message) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true, Resolver: opaqueResolver{}}.Marshal(m)
	if err != nil {
		return nil, err
	}
	// protojson varies its whitespace on purpose; Envoy's is fixed.
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, err
	}
	if err := json.Indent(&out, compact.Bytes(), "", " "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// ConfigDump is the proxy's /config_dump, sections in Envoy's order, each
// section's resources by name.
func (c *XDSClient) ConfigDump(includeEDS bool) *adminv3.ConfigDump {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := func(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
	var configs []proto.Message

	configs = append(configs, &adminv3.BootstrapConfigDump{
		Bootstrap: &bootstrapv3.Bootstrap{
			Node: c.Node,
			DynamicResources: &bootstrapv3.Bootstrap_DynamicResources{
				AdsConfig: &corev3.ApiConfigSource{ApiType: corev3.ApiConfigSource_GRPC, TransportApiVersion: corev3.ApiVersion_V3},
				CdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3},
				LdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3},
			},
		},
		LastUpdated: ts(c.connectedAt),
	})

	cds, eds := c.types[ClusterType], c.types[EndpointType]
	clusters := &adminv3.ClustersConfigDump{VersionInfo: cds.Version}
	for _, r := range sortedResources(cds.Resources) {
		if c.warmingLocked(r) {
			clusters.DynamicWarmingClusters = append(clusters.DynamicWarmingClusters, &adminv3.ClustersConfigDump_DynamicCluster{
				VersionInfo: r.Version, Cluster: r.Any, LastUpdated: ts(r.Updated)})
			continue
		}
		clusters.DynamicActiveClusters = append(clusters.DynamicActiveClusters, &adminv3.ClustersConfigDump_DynamicCluster{
			VersionInfo: r.Version, Cluster: r.Any, LastUpdated: ts(r.Updated)})
	}
	configs = append(configs, clusters)

	if includeEDS {
		endpoints := &adminv3.EndpointsConfigDump{}
		for _, r := range sortedResources(eds.Resources) {
			endpoints.DynamicEndpointConfigs = append(endpoints.DynamicEndpointConfigs, &adminv3.EndpointsConfigDump_DynamicEndpointConfig{
				VersionInfo: r.Version, EndpointConfig: r.Any, LastUpdated: ts(r.Updated)})
		}
		configs = append(configs, endpoints)
	}

	lds := c.types[ListenerType]
	listeners := &adminv3.ListenersConfigDump{VersionInfo: lds.Version}
	for _, r := range sortedResources(lds.Resources) {
		listeners.DynamicListeners = append(listeners.DynamicListeners, &adminv3.ListenersConfigDump_DynamicListener{
			Name:        r.Name,
			ActiveState: &adminv3.ListenersConfigDump_DynamicListenerState{VersionInfo: r.Version, Listener: r.Any, LastUpdated: ts(r.Updated)},
		})
	}
	configs = append(configs, listeners, &adminv3.ScopedRoutesConfigDump{})

	routes := &adminv3.RoutesConfigDump{}
	for _, r := range sortedResources(c.types[RouteType].Resources) {
		routes.DynamicRouteConfigs = append(routes.DynamicRouteConfigs, &adminv3.RoutesConfigDump_DynamicRouteConfig{
			VersionInfo: r.Version, RouteConfig: r.Any, LastUpdated: ts(r.Updated)})
	}
	configs = append(configs, routes)

	dump := &adminv3.ConfigDump{}
	for _, m := range configs {
		a, err := anypb.New(m)
		if err != nil {
			// Only admin/v3 messages of this build: cannot fail.
			panic(err)
		}
		dump.Configs = append(dump.Configs, a)
	}
	return dump
}

// warmingLocked reports an EDS cluster whose endpoints have not arrived:
// Envoy keeps such a cluster warming (Istio sets no initial fetch timeout).
func (c *XDSClient) warmingLocked(r *XDSResource) bool {
	cl := r.Message.(*clusterv3.Cluster)
	return cl.GetType() == clusterv3.Cluster_EDS && c.types[EndpointType].Resources[edsServiceName(cl)] == nil
}

func edsServiceName(cl *clusterv3.Cluster) string {
	if n := cl.GetEdsClusterConfig().GetServiceName(); n != "" {
		return n
	}
	return cl.GetName()
}

// Clusters is the proxy's /clusters?format=json: its active dynamic
// clusters by name.
func (c *XDSClient) Clusters() *adminv3.Clusters {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &adminv3.Clusters{}
	for _, r := range sortedResources(c.types[ClusterType].Resources) {
		if c.warmingLocked(r) {
			continue
		}
		cl := r.Message.(*clusterv3.Cluster)
		status := &adminv3.ClusterStatus{
			Name:              cl.GetName(),
			AddedViaApi:       true,
			ObservabilityName: cl.GetName(),
			CircuitBreakers:   circuitBreakers(cl),
		}
		if cl.GetAltStatName() != "" {
			status.ObservabilityName = cl.GetAltStatName()
		}
		var cla *endpointv3.ClusterLoadAssignment
		switch cl.GetType() {
		case clusterv3.Cluster_EDS:
			status.EdsServiceName = cl.GetEdsClusterConfig().GetServiceName()
			cla = c.types[EndpointType].Resources[edsServiceName(cl)].Message.(*endpointv3.ClusterLoadAssignment)
		case clusterv3.Cluster_STATIC:
			cla = cl.GetLoadAssignment()
		}
		status.HostStatuses = hostStatuses(cla)
		out.ClusterStatuses = append(out.ClusterStatuses, status)
	}
	return out
}

// circuitBreakers are the cluster's thresholds with Envoy's defaults
// filled in, as /clusters shows them (1024 connections, pending and
// requests, 3 retries, per priority).
func circuitBreakers(cl *clusterv3.Cluster) *clusterv3.CircuitBreakers {
	out := &clusterv3.CircuitBreakers{}
	byPriority := map[corev3.RoutingPriority]*clusterv3.CircuitBreakers_Thresholds{}
	for _, t := range cl.GetCircuitBreakers().GetThresholds() {
		byPriority[t.GetPriority()] = t
	}
	for _, p := range []corev3.RoutingPriority{corev3.RoutingPriority_DEFAULT, corev3.RoutingPriority_HIGH} {
		t := byPriority[p]
		orDefault := func(v *wrapperspb.UInt32Value, def uint32) *wrapperspb.UInt32Value {
			if v == nil {
				return wrapperspb.UInt32(def)
			}
			return v
		}
		th := &clusterv3.CircuitBreakers_Thresholds{
			Priority:           p,
			MaxConnections:     orDefault(t.GetMaxConnections(), 1024),
			MaxPendingRequests: orDefault(t.GetMaxPendingRequests(), 1024),
			MaxRequests:        orDefault(t.GetMaxRequests(), 1024),
			MaxRetries:         orDefault(t.GetMaxRetries(), 3),
		}
		out.Thresholds = append(out.Thresholds, th)
	}
	return out
}

// hostStatuses are the hosts of cla as Envoy's /clusters lists them, with
// the zero counters and gauges a host starts with.
func hostStatuses(cla *endpointv3.ClusterLoadAssignment) []*adminv3.HostStatus {
	var out []*adminv3.HostStatus
	for _, le := range cla.GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			ep := lb.GetEndpoint()
			if ep == nil {
				continue
			}
			weight := lb.GetLoadBalancingWeight().GetValue()
			if weight == 0 {
				weight = 1
			}
			out = append(out, &adminv3.HostStatus{
				Address:      ep.GetAddress(),
				Stats:        zeroHostStats(),
				HealthStatus: &adminv3.HostHealthStatus{EdsHealthStatus: adminEDSHealth(lb.GetHealthStatus())},
				Weight:       weight,
				Hostname:     ep.GetHostname(),
				Priority:     le.GetPriority(),
				Locality:     le.GetLocality(),
			})
		}
	}
	return out
}

// adminEDSHealth is the EDS health Envoy's admin reports for a host given
// the status EDS sent: UNHEALTHY and TIMEOUT fail the host, DEGRADED and
// DRAINING are kept as such, anything else (UNKNOWN included) is HEALTHY.
func adminEDSHealth(s corev3.HealthStatus) corev3.HealthStatus {
	switch s {
	case corev3.HealthStatus_UNHEALTHY, corev3.HealthStatus_TIMEOUT:
		return corev3.HealthStatus_UNHEALTHY
	case corev3.HealthStatus_DEGRADED, corev3.HealthStatus_DRAINING:
		return s
	default:
		return corev3.HealthStatus_HEALTHY
	}
}

func zeroHostStats() []*adminv3.SimpleMetric {
	var out []*adminv3.SimpleMetric
	for _, n := range []string{"cx_connect_fail", "cx_total", "rq_error", "rq_success", "rq_timeout", "rq_total"} {
		out = append(out, &adminv3.SimpleMetric{Type: adminv3.SimpleMetric_COUNTER, Name: n})
	}
	for _, n := range []string{"cx_active", "rq_active"} {
		out = append(out, &adminv3.SimpleMetric{Type: adminv3.SimpleMetric_GAUGE, Name: n})
	}
	return out
}

// Listeners is the proxy's /listeners?format=json.
func (c *XDSClient) Listeners() *adminv3.Listeners {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &adminv3.Listeners{}
	for _, r := range sortedResources(c.types[ListenerType].Resources) {
		l := r.Message.(*listenerv3.Listener)
		st := &adminv3.ListenerStatus{Name: l.GetName(), LocalAddress: l.GetAddress()}
		for _, a := range l.GetAdditionalAddresses() {
			st.AdditionalLocalAddresses = append(st.AdditionalLocalAddresses, a.GetAddress())
		}
		out.ListenerStatuses = append(out.ListenerStatuses, st)
	}
	return out
}

func sortedResources(m map[string]*XDSResource) []*XDSResource {
	out := make([]*XDSResource, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// opaqueResolver resolves the types this build links and stands an empty
// message of the same full name in for the others, so the JSON keeps the
// extension's @type (what a reader uses to see which filter is configured)
// where protojson would otherwise fail the whole document.
type opaqueResolver struct{}

func (opaqueResolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(name); err == nil {
		return mt, nil
	}
	return opaqueType(name)
}

func (r opaqueResolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	return opaqueType(protoreflect.FullName(url[strings.LastIndexByte(url, '/')+1:]))
}

func (opaqueResolver) FindExtensionByName(field protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(field)
}

func (opaqueResolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}

var opaqueTypes sync.Map // protoreflect.FullName -> protoreflect.MessageType

// opaqueType is a message type without fields named name.
func opaqueType(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, ok := opaqueTypes.Load(name); ok {
		return mt.(protoreflect.MessageType), nil
	}
	pkg, msg := "", string(name)
	if i := strings.LastIndexByte(msg, '.'); i >= 0 {
		pkg, msg = msg[:i], msg[i+1:]
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("meshlab/opaque/" + string(name) + ".proto"),
		Package:     proto.String(pkg),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String(msg)}},
	}, nil)
	if err != nil {
		return nil, err
	}
	mt, _ := opaqueTypes.LoadOrStore(name, dynamicpb.NewMessageType(fd.Messages().Get(0)))
	return mt.(protoreflect.MessageType), nil
}
