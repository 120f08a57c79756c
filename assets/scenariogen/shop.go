package main

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The shop: the small mesh every scenario starts from (web, orders and
// friends in namespace shop), and the helpers that turn a scenario's
// story into objects, traffic, Envoy state and files.

// MeshOptions are the mesh-wide settings a scenario starts from.
type MeshOptions struct {
	HoldApplicationUntilProxyStarts bool
	// TerminationDrainDuration is defaultConfig's, e.g. "30s"; "" leaves
	// Istio's 5 s default.
	TerminationDrainDuration string
	// RegistryOnly is outboundTrafficPolicy REGISTRY_ONLY.
	RegistryOnly bool
	// NativeSidecars is istiod's ENABLE_NATIVE_SIDECARS: pods get
	// istio-proxy as a restartable init container.
	NativeSidecars bool
}

// meshConfig is the "mesh" key of istio-system/istio.
func meshConfig(o MeshOptions, shapes Shapes) string {
	var defaults, top string
	if o.HoldApplicationUntilProxyStarts {
		defaults += "  holdApplicationUntilProxyStarts: true\n"
	}
	if o.TerminationDrainDuration != "" {
		defaults += "  terminationDrainDuration: " + o.TerminationDrainDuration + "\n"
	}
	if o.RegistryOnly {
		top += "outboundTrafficPolicy:\n  mode: REGISTRY_ONLY\n"
	}
	return "accessLogFile: /dev/stdout\n" +
		shapes.AccessLog.meshConfig() +
		"defaultConfig:\n" +
		"  discoveryAddress: istiod.istio-system.svc:15012\n" +
		defaults +
		"  proxyStatsMatcher:\n" +
		"    inclusionPrefixes:\n" +
		"    - cluster.outbound\n" +
		"defaultProviders:\n" +
		"  metrics:\n" +
		"  - prometheus\n" +
		"enablePrometheusMerge: true\n" +
		top +
		"rootNamespace: istio-system\n" +
		"trustDomain: cluster.local\n"
}

// serviceIPs are the shop's ClusterIPs; other services get 10.96.40.x.
var serviceIPs = map[string]string{
	"web": "10.96.31.7", "orders": "10.96.14.20", "orders-api": "10.96.14.20", "postgres": "10.96.0.20",
	"checkout": "10.96.22.41", "catalog": "10.96.18.3",
}

var images = map[string]string{
	"web":        "registry.shop.example.com/web:1.8.3",
	"orders":     "registry.shop.example.com/orders:2.14.0",
	"orders-api": "registry.shop.example.com/orders-api:3.2.1",
	"checkout":   "registry.shop.example.com/checkout:4.0.7",
	"catalog":    "registry.shop.example.com/catalog:1.3.0",
	"postgres":   "docker.io/library/postgres:16.4",
}

// request is one call a sidecar made, for its istio_requests_total.
type request struct {
	from                      *Pod
	at                        time.Time
	code                      int
	flags, service, namespace string
	to                        *Pod
}

// Shop is a scenario world with the shop's conventions.
type Shop struct {
	world  *World
	now    time.Time
	native bool
	// rng draws paths, durations and jitter (ids.go).
	rng           *rand.Rand
	serverVersion string
	// xdsVersion is the push version every sidecar's config carries.
	xdsVersion  string
	shopCreated time.Time
	sidecars    []*Sidecar
	requests    []request
	// extraFiles are recorded files no sidecar writes (ztunnel's
	// config_dump, a waypoint's /clusters), by path in the scenario.
	extraFiles map[string]string
	// syncz overrides istiod's syncz entry of a proxy id (a STALE proxy).
	syncz map[string]Object
	// shapes are the output formats of this scenario's proxies.
	shapes Shapes
	// gateways are the scenario's gateway pods (proxy type router), which
	// syncz lists although they run in istio-system.
	gateways []*Pod
}

func newShop(name string, now time.Time, mesh MeshOptions, shapes Shapes) *Shop {
	s := &Shop{
		world:         newWorld(name, now),
		now:           now,
		native:        mesh.NativeSidecars,
		rng:           newDraws(name),
		serverVersion: "v1.30.4",
		syncz:         map[string]Object{},
		shapes:        shapes,
	}
	s.xdsVersion = fmt.Sprintf("%s/%d", apiTime(now.Add(-14*time.Minute)), 40+s.rng.IntN(30))
	s.world.ControlPlane(now.Add(-(9*day + 2*time.Hour + 17*time.Minute)), meshConfig(mesh, shapes), mesh.NativeSidecars)
	s.shopCreated = now.Add(-(61*day + 3*time.Hour))
	return s
}

// --- objects ------------------------------------------------------------

// namespace adds namespace shop with injection enabled.
func (s *Shop) namespace() { s.world.Namespace("shop", s.shopCreated, "enabled") }

// service adds a shop Service on port 8080 selecting app: name.
func (s *Shop) service(name string) { s.serviceOnPort(name, "http", 8080, 8080) }

func (s *Shop) serviceOnPort(name, portName string, port, target int) {
	ip, ok := serviceIPs[name]
	if !ok {
		ip = fmt.Sprintf("10.96.40.%d", 10+len(s.world.services))
	}
	s.world.Service(ServiceSpec{
		Namespace: "shop", Name: name, ClusterIP: ip, Selector: Object{{"app", name}},
		Created: s.shopCreated.Add(3 * time.Minute), Ports: []ServicePort{{portName, port, target}},
	})
}

// podSpec is a pod with the shop's defaults: the mesh's sidecar mode, the
// app's image, port http 8080, a /healthz/ready check, version v1, owned
// by the ReplicaSet its name implies.
func (s *Shop) podSpec(namespace, name, app, nodeName string, host int, created time.Time) PodSpec {
	sidecar := ClassicSidecar
	if s.native {
		sidecar = NativeSidecar
	}
	image, ok := images[app]
	if !ok {
		image = "registry.shop.example.com/" + app + ":1.0.0"
	}
	return PodSpec{
		Namespace: namespace, Name: name, App: app, Node: nodeName, Host: host, Created: created,
		Sidecar:       sidecar,
		Image:         image,
		Ports:         []ContainerPort{{"http", 8080}},
		Readiness:     &HTTPCheck{"/healthz/ready", 8080},
		Controller:    withoutLastDashPart(name),
		Version:       "v1",
		AppReady:      true,
		ProxyReady:    true,
		RestartPolicy: "Always",
	}
}

// pod adds a pod from podSpec's defaults changed by tweak (may be nil).
func (s *Shop) pod(namespace, name, app, nodeName string, host int, created time.Time, tweak func(*PodSpec)) *Pod {
	spec := s.podSpec(namespace, name, app, nodeName, host, created)
	if tweak != nil {
		tweak(&spec)
	}
	return s.world.Pod(spec)
}

// Slice is an EndpointSlice of a shop service.
type Slice struct {
	// Name is the slice's, SERVICE-XXXXX as the controller names it.
	Name      string
	Service   string
	Endpoints []Endpoint
	// Port and PortName default to 8080 "http".
	Port     int
	PortName string
	// Created defaults to 20 minutes before now.
	Created time.Time
}

func (s *Shop) slice(sl Slice) {
	port, portName, created := sl.Port, firstNonEmpty(sl.PortName, "http"), sl.Created
	if port == 0 {
		port = 8080
	}
	if created.IsZero() {
		created = s.now.Add(-20 * time.Minute)
	}
	s.world.EndpointSlice("shop", sl.Service, sl.Name, sl.Endpoints, portName, port, created)
}

// istio adds an Istio resource in namespace shop.
func (s *Shop) istio(apiVersion, kind, name string, created time.Time, spec any) {
	s.world.IstioObject(apiVersion, kind, "shop", name, created, spec)
}

func (s *Shop) destinationRule(name string, created time.Time, spec any) {
	s.istio("networking.istio.io/v1", "DestinationRule", name, created, spec)
}

func (s *Shop) virtualService(name string, created time.Time, spec any) {
	s.istio("networking.istio.io/v1", "VirtualService", name, created, spec)
}

// --- envoy -------------------------------------------------------------

// Outbound is an outbound EDS cluster of a shop sidecar.
type Outbound struct {
	Service string
	// Namespace defaults to shop, Port to 8080.
	Namespace string
	Port      int
	Subset    string
	// Pods become hosts at podIP:Port with plausible counters; Hosts are
	// used as given instead.
	Pods  []*Pod
	Hosts []*Host
	// TLS defaults to auto mTLS.
	TLS          UpstreamTLS
	Outlier      *OutlierDetection
	OutlierStats map[string]int
	Thresholds   Thresholds
	// IdleTimeout and MaxRequestsPerConnection are a DestinationRule's
	// connectionPool.http idleTimeout and maxRequestsPerConnection.
	IdleTimeout              string
	MaxRequestsPerConnection int
	Stats                    map[string]int
}

func (s *Shop) outbound(o Outbound) *Cluster {
	ns := firstNonEmpty(o.Namespace, "shop")
	port := o.Port
	if port == 0 {
		port = 8080
	}
	hosts := o.Hosts
	for _, p := range o.Pods {
		// EDS carries endpoint ports, not service ports.
		h := &Host{IP: p.IP, Port: port, Node: p.Node}
		h.CxTotal = 3 + s.rng.IntN(20)
		h.RqSuccess = 400 + s.rng.IntN(2000)
		h.CxActive = 1 + s.rng.IntN(3)
		hosts = append(hosts, h)
	}
	return &Cluster{
		Name:  fmt.Sprintf("outbound|%d|%s|%s.%s.svc.%s", port, o.Subset, o.Service, ns, meshDomain),
		Hosts: hosts, Kind: EDSCluster, TLS: UpstreamTLS(firstNonEmpty(string(o.TLS), string(AutoMTLS))),
		ServiceAccount: o.Service, Outlier: o.Outlier, OutlierStats: o.OutlierStats, Thresholds: o.Thresholds, Stats: o.Stats,
		IdleTimeout: o.IdleTimeout, MaxRequestsPerConnection: o.MaxRequestsPerConnection,
		ServiceNamespace: ns, ServiceName: o.Service, Port: port,
	}
}

// backgroundClusters are what every sidecar carries besides the
// scenario's own clusters.
func backgroundClusters() []*Cluster {
	istiod := func(port int) *Cluster {
		return &Cluster{Name: fmt.Sprintf("outbound|%d||istiod.istio-system.svc.cluster.local", port),
			Hosts: []*Host{{IP: "10.244.0.5", Port: port, Node: "worker-a"}}, Kind: EDSCluster, TLS: AutoMTLS,
			ServiceNamespace: "istio-system", ServiceName: "istiod", Port: port, NotInConfigDump: true}
	}
	return []*Cluster{
		{Name: "BlackHoleCluster", Kind: StaticCluster, TLS: Plaintext},
		{Name: "InboundPassthroughCluster", Kind: OriginalDstCluster, TLS: Plaintext},
		{Name: "PassthroughCluster", Kind: OriginalDstCluster, TLS: Plaintext},
		{Name: "agent", Hosts: []*Host{{IP: "127.0.0.1", Port: 15020, RqSuccess: 412}}, Kind: BootstrapCluster, TLS: Plaintext, NotInConfigDump: true},
		{Name: "outbound|443||kubernetes.default.svc.cluster.local", Hosts: []*Host{{IP: "10.0.1.10", Port: 6443}}, Kind: EDSCluster, TLS: AutoMTLS,
			ServiceNamespace: "default", ServiceName: "kubernetes", Port: 443, NotInConfigDump: true},
		{Name: "outbound|53||kube-dns.kube-system.svc.cluster.local",
			Hosts: []*Host{{IP: "10.244.0.2", Port: 53, Node: "worker-a"}, {IP: "10.244.1.2", Port: 53, Node: "worker-b"}}, Kind: EDSCluster, TLS: AutoMTLS,
			ServiceNamespace: "kube-system", ServiceName: "kube-dns", Port: 53, NotInConfigDump: true},
		istiod(15010),
		istiod(15012),
		istiod(15014),
		{Name: "prometheus_stats", Hosts: []*Host{{IP: "127.0.0.1", Port: 15000, RqSuccess: 97}}, Kind: BootstrapCluster, TLS: Plaintext, NotInConfigDump: true},
		{Name: "sds-grpc", Hosts: []*Host{{Pipe: "./var/run/secrets/workload-spiffe-uds/socket", RqSuccess: 2}}, Kind: BootstrapCluster, TLS: Plaintext, NotInConfigDump: true},
		{Name: "xds-grpc", Hosts: []*Host{{Pipe: "./etc/istio/proxy/XDS", RqSuccess: 1}}, Kind: BootstrapCluster, TLS: Plaintext, NotInConfigDump: true},
	}
}

// listeners are a shop sidecar's listeners: the cluster's services, HTTP
// 8080, extra, and the two virtual listeners.
func listeners(extra ...Listener) []Listener {
	out := []Listener{
		{"10.96.0.1_443", "10.96.0.1", 443}, {"10.96.0.10_53", "10.96.0.10", 53},
		{"0.0.0.0_15010", "0.0.0.0", 15010}, {"10.96.0.15_15012", "10.96.0.15", 15012},
		{"10.96.0.15_443", "10.96.0.15", 443}, {"0.0.0.0_15014", "0.0.0.0", 15014},
		{"0.0.0.0_8080", "0.0.0.0", 8080},
	}
	out = append(out, extra...)
	return append(out, Listener{"virtualOutbound", "0.0.0.0", 15001}, Listener{"virtualInbound", "0.0.0.0", 15006})
}

// EnvoyState is what recordSidecar saves of one sidecar besides its
// clusters; zero values are the shop's defaults.
type EnvoyState struct {
	Listeners []Listener
	Routes    []Object
	// CDSRejected counts the CDS updates the Envoy rejected since it
	// started (cluster_manager.cds.update_rejected).
	CDSRejected int
	// WarmingSecrets are SDS secrets the Envoy asked for and was never
	// sent (config_dump dynamic_warming_secrets).
	WarmingSecrets []string
}

// recordSidecar saves pod's Envoy admin output: clusters plus the
// background ones.
func (s *Shop) recordSidecar(p *Pod, clusters []*Cluster, state EnvoyState) *Sidecar {
	ls := state.Listeners
	if ls == nil {
		ls = listeners()
	}
	sc := &Sidecar{Pod: p, Now: s.now, Version: s.xdsVersion, Clusters: append(clusters, backgroundClusters()...), Listeners: ls, Routes: state.Routes,
		AltStatNames: s.shapes.AltStatNames, CDSRejected: state.CDSRejected, WarmingSecrets: state.WarmingSecrets}
	s.sidecars = append(s.sidecars, sc)
	return sc
}

// --- logs --------------------------------------------------------------

// proxyLog writes istio-proxy's startup, ready 0.9 s after it started.
func (s *Shop) proxyLog(p *Pod) { s.proxyLogReadyAfter(p, 0.9) }

func (s *Shop) proxyLogReadyAfter(p *Pod, seconds float64) {
	s.world.log(p.Namespace, p.Name, "istio-proxy", false, agentStartup(p, p.ProxyStarted, seconds)...)
}

func (s *Shop) appLog(p *Pod, lines []string) {
	s.world.log(p.Namespace, p.Name, p.Container, false, lines...)
}

// previousAppLog is the log of the app container's previous instance.
func (s *Shop) previousAppLog(p *Pod, lines []string) {
	s.world.log(p.Namespace, p.Name, p.Container, true, lines...)
}

// --- traffic -------------------------------------------------------------

// optionalInt is an int a scenario may pin; unset, the generator draws a
// plausible value.
type optionalInt struct {
	value int
	set   bool
}

func exactly(v int) optionalInt { return optionalInt{v, true} }

// Call is one request from a pod's app through its sidecar to a service.
type Call struct {
	// From is the calling pod; nil is a caller that logs nothing (the
	// upstream sidecar sees Remote).
	From    *Pod
	Service string
	At      time.Time
	// To is the pod the request reached; nil when it reached none.
	To *Pod
	// Code defaults to 200; Flags to "-", Details to via_upstream.
	Code           int
	Flags, Details string
	// Method defaults to GET, Path to a random orders API path.
	Method, Path string
	// Port defaults to 8080, Namespace to shop.
	Port      int
	Namespace string
	Subset    string
	// TransportFailure is %UPSTREAM_TRANSPORT_FAILURE_REASON%.
	TransportFailure string
	// DurationMs and TxBytes default to plausible random values.
	DurationMs, TxBytes optionalInt
	// Cluster overrides the outbound cluster name ("-" for none).
	Cluster string
	// Route defaults to "default".
	Route string
	// NoUpstreamLog leaves out the upstream sidecar's inbound line.
	NoUpstreamLog bool
	// The upstream sidecar's view, when it differs from the caller's.
	InboundCode                                                   int
	InboundFlags, InboundDetails, InboundTransportFailure, Remote string
}

// call logs c: the source sidecar's outbound line and, when the request
// reached an upstream sidecar, that sidecar's inbound line.
func (s *Shop) call(c Call) {
	rng := s.rng
	code := c.Code
	if code == 0 {
		code = 200
	}
	flags, details, method := firstNonEmpty(c.Flags, "-"), firstNonEmpty(c.Details, "via_upstream"), firstNonEmpty(c.Method, "GET")
	port, ns := c.Port, firstNonEmpty(c.Namespace, "shop")
	if port == 0 {
		port = 8080
	}
	path := c.Path
	if path == "" {
		byCustomer := fmt.Sprintf("/api/orders?customer=%d", between(rng, 10000, 99999))
		byID := fmt.Sprintf("/api/orders/%d", between(rng, 100000, 999999))
		path = []string{byCustomer, byID}[rng.IntN(2)]
	}
	duration := c.DurationMs.value
	if !c.DurationMs.set {
		if code == 200 {
			duration = 2 + rng.IntN(14)
		} else {
			duration = 1 + rng.IntN(3)
		}
	}
	tx := c.TxBytes.value
	if !c.TxBytes.set {
		if code == 200 {
			tx = 400 + rng.IntN(900)
		} else {
			// The size of Envoy's local reply: "no healthy upstream",
			// "upstream connect error or disconnect/reset before headers.
			// reset reason: ...".
			tx = map[string]int{"UH": 19, "UC": 95, "UO": 81, "UF,URX": 152, "UF": 145}[flags]
			if tx == 0 {
				tx = 95
			}
		}
	}
	cluster := firstNonEmpty(c.Cluster, fmt.Sprintf("outbound|%d|%s|%s.%s.svc.%s", port, c.Subset, c.Service, ns, meshDomain))
	authority := fmt.Sprintf("%s:%d", c.Service, port)
	if c.From != nil && c.From.Namespace != ns {
		authority = fmt.Sprintf("%s.%s:%d", c.Service, ns, port)
	}
	upstreamHost := "-"
	if c.To != nil {
		upstreamHost = fmt.Sprintf("%s:%d", c.To.IP, port)
	}
	requestID := randomUUID(rng)
	ephemeral := 30000 + rng.IntN(30000)
	rx := 0
	if method != "GET" {
		rx = 212
	}
	if c.From != nil && c.From.Sidecar != NoSidecar {
		s.requests = append(s.requests, request{c.From, c.At, code, flags, c.Service, ns, c.To})
		upstreamTime := "-"
		if flags == "-" {
			upstreamTime = strconv.Itoa(max(duration-1, 1))
		}
		upstreamLocal := "-"
		if c.To != nil && (flags == "-" || flags == "URX") {
			upstreamLocal = fmt.Sprintf("%s:%d", c.From.IP, 30000+rng.IntN(30000))
		}
		clusterIP, ok := serviceIPs[c.Service]
		if !ok {
			clusterIP = "10.96.40.9"
		}
		s.world.log(c.From.Namespace, c.From.Name, "istio-proxy", false, s.accessLine(AccessEntry{
			Start: c.At, Method: method, Path: path, Code: code, Flags: flags, Details: details,
			UpstreamHost: upstreamHost, Cluster: cluster,
			DownstreamLocal: fmt.Sprintf("%s:%d", clusterIP, port), DownstreamRemote: fmt.Sprintf("%s:%d", c.From.IP, ephemeral),
			Authority: authority, UpstreamLocal: upstreamLocal, TransportFailure: c.TransportFailure,
			RxBytes: rx, TxBytes: tx, DurationMs: duration, UpstreamTime: upstreamTime, RequestID: requestID, Route: c.Route,
		}))
	}
	if !c.NoUpstreamLog && c.To != nil && c.To.Sidecar != NoSidecar {
		inboundCode := c.InboundCode
		if inboundCode == 0 {
			inboundCode = code
		}
		inboundFlags := firstNonEmpty(c.InboundFlags, "-")
		inboundDuration := max(duration-1, 1)
		upstreamTime := "-"
		if inboundFlags == "-" {
			upstreamTime = strconv.Itoa(max(inboundDuration-1, 1))
		}
		inboundTx := tx
		if inboundCode != code {
			inboundTx = 19
		}
		remote := c.Remote
		if remote == "" {
			remote = "10.244.2.41"
			if c.From != nil {
				remote = c.From.IP
			}
		}
		upstreamLocal := "-"
		if inboundFlags == "-" {
			upstreamLocal = fmt.Sprintf("127.0.0.6:%d", 30000+rng.IntN(30000))
		}
		s.world.log(c.To.Namespace, c.To.Name, "istio-proxy", false, s.accessLine(AccessEntry{
			Start: c.At.Add(time.Millisecond), Method: method, Path: path, Code: inboundCode, Flags: inboundFlags,
			Details:      firstNonEmpty(c.InboundDetails, "via_upstream"),
			UpstreamHost: fmt.Sprintf("%s:%d", c.To.IP, port), Cluster: fmt.Sprintf("inbound|%d||", port),
			DownstreamLocal: fmt.Sprintf("%s:%d", c.To.IP, port), DownstreamRemote: fmt.Sprintf("%s:%d", remote, ephemeral+7),
			Authority: authority, UpstreamLocal: upstreamLocal, TransportFailure: c.InboundTransportFailure,
			RxBytes: rx, TxBytes: inboundTx, DurationMs: inboundDuration, UpstreamTime: upstreamTime, RequestID: requestID,
			SNI: fmt.Sprintf("outbound_.%d_.%s_.%s.%s.svc.%s", port, c.Subset, c.Service, ns, meshDomain),
		}))
	}
}

// traffic calls send for request times from start to end, everyMs apart
// on average, jittered.
func (s *Shop) traffic(start, end time.Time, everyMs int, send func(t time.Time, i int)) {
	for t, i := start, 0; t.Before(end); i++ {
		send(t, i)
		t = t.Add(millis(float64(everyMs) * (0.5 + s.rng.Float64())))
	}
}

// The source's counters are recorded twice, metricsWindow apart, the second
// time at the recording (stats_prometheus.txt and .2.txt): the metrics step
// reads the calls between the two samples as the 503 rate "now". A story's
// steady traffic stops where the window starts and the story says what the
// window holds, so the rate "now" is the story's, not the draws'.
const metricsWindow = 5 * time.Second

// windowStart is the first sample of the counters.
func (s *Shop) windowStart() time.Time { return s.now.Add(-metricsWindow) }

// inWindow calls send for n requests spread evenly over the window.
func (s *Shop) inWindow(n int, send func(t time.Time, i int)) {
	for i := range n {
		send(s.windowStart().Add(metricsWindow*time.Duration(i+1)/time.Duration(n+1)), i)
	}
}

// countResponses counts the recorded requests answered with code.
func (s *Shop) countResponses(code int) int {
	n := 0
	for _, r := range s.requests {
		if r.code == code {
			n++
		}
	}
	return n
}

// --- syncz and files -----------------------------------------------------

// nonce is istiod's nonce: the push version (time/counter) and a UUID.
func (s *Shop) nonce(at time.Time) string {
	return fmt.Sprintf("%s/%d%s", apiTime(at), 40+(at.Unix()/60)%30, randomUUID(s.rng))
}

func (s *Shop) synczEntries() []Object {
	var out []Object
	for _, p := range s.world.sortedPods() {
		gateway := slices.Contains(s.gateways, p)
		if p.Sidecar == NoSidecar || p.Namespace == "istio-system" && !gateway || p.proxyExited {
			continue
		}
		at := s.now.Add(-(3*time.Minute + time.Duration(s.rng.IntN(50))*time.Second))
		proxyType := "sidecar"
		if gateway {
			proxyType = "router"
		}
		e := Object{{"cluster_id", "Kubernetes"}, {"proxy", p.ProxyID()}, {"proxy_type", proxyType}, {"istio_version", p.ProxyVersion}}
		for _, typ := range []string{"cluster", "listener", "route", "endpoint"} {
			n := s.nonce(at)
			e.Set(typ+"_sent", n)
			e.Set(typ+"_acked", n)
		}
		for _, f := range s.syncz[p.ProxyID()] {
			e.Set(f.Key, f.Value)
		}
		out = append(out, e)
	}
	return out
}

// files renders the scenario: every file by its path under the
// scenario's folder.
func (s *Shop) files(header Object) map[string]string {
	out := map[string]string{"scenario.yaml": yamlDocuments(header)}
	manifestFiles := sortedKeys(s.world.manifests)
	first := map[string]int{"namespaces.yaml": 0, "istio-system.yaml": 1}
	sort.SliceStable(manifestFiles, func(i, j int) bool {
		rank := func(name string) int {
			if r, ok := first[name]; ok {
				return r
			}
			return 9
		}
		return rank(manifestFiles[i]) < rank(manifestFiles[j])
	})
	for i, name := range manifestFiles {
		out[fmt.Sprintf("manifests/%02d-%s", i, name)] = yamlDocuments(s.world.manifests[name]...)
	}
	for _, sc := range s.sidecars {
		dir := path.Join("envoy", sc.Pod.Namespace, sc.Pod.Name)
		for name, text := range sc.files() {
			out[path.Join(dir, name)] = text
		}
		out[path.Join(dir, "stats_prometheus.txt")] = s.prometheus(sc, s.windowStart())
		out[path.Join(dir, "stats_prometheus.2.txt")] = s.prometheus(sc, s.now)
	}
	for p, text := range s.extraFiles {
		out[p] = text
	}
	for k, lines := range s.world.logs {
		sorted := append([]string(nil), lines...)
		sort.SliceStable(sorted, func(i, j int) bool { return logLineTime(sorted[i]) < logLineTime(sorted[j]) })
		name := k.container + ".log"
		if k.previous {
			name = k.container + ".previous.log"
		}
		out[path.Join("logs", k.namespace, k.pod, name)] = strings.Join(sorted, "\n") + "\n"
	}
	if entries := s.synczEntries(); len(entries) > 0 {
		out["istiod/syncz.json"] = indentedJSON(entries, 2)
	}
	return out
}
