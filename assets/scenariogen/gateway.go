package main

import (
	"fmt"
	"strconv"
	"time"
)

// The shop's ingress: istio-ingressgateway as Istio's Helm "gateway" chart
// installs it in istio-system (an istio-proxy run as a router, no app, no
// istio-init), its LoadBalancer Service mapping 80 and 443 to 8080 and
// 8443, the Gateways that select it, its Envoy and its access log.

const (
	gatewayNamespace = "istio-system"
	gatewayName      = "istio-ingressgateway"
	gatewayPodName   = "istio-ingressgateway-6b7f9c8d4-k2x7p"
	gatewayClusterIP = "10.96.100.10"
	// gatewayClient is where the cloud load balancer's requests come
	// from, as the gateway sees them.
	gatewayClient = "10.244.0.1"
)

// ingressGateway adds istio-ingressgateway's pod, Service and
// EndpointSlice, created at created.
func (s *Shop) ingressGateway(created time.Time) *Pod {
	p := s.routerPod(RouterPod{
		Namespace: gatewayNamespace, Name: gatewayPodName, Workload: gatewayName, Host: 30, Created: created,
		Labels: Object{{"app", gatewayName}, {"istio", "ingressgateway"}, {"pod-template-hash", lastDashPart(withoutLastDashPart(gatewayPodName))},
			{"service.istio.io/canonical-name", gatewayName}, {"service.istio.io/canonical-revision", "latest"}, {"sidecar.istio.io/inject", "false"}},
		Ports: []Object{
			{{"containerPort", 15021}, {"name", "status-port"}, {"protocol", "TCP"}},
			{{"containerPort", 8080}, {"name", "http2"}, {"protocol", "TCP"}},
			{{"containerPort", 8443}, {"name", "https"}, {"protocol", "TCP"}},
			{{"containerPort", 15090}, {"name", "http-envoy-prom"}, {"protocol", "TCP"}},
		},
	})
	s.world.Service(ServiceSpec{
		Namespace: gatewayNamespace, Name: gatewayName, ClusterIP: gatewayClusterIP,
		Selector: Object{{"app", gatewayName}, {"istio", "ingressgateway"}}, Created: created.Add(-time.Second),
		Ports:  []ServicePort{{"status-port", 15021, 15021}, {"http2", 80, 8080}, {"https", 443, 8443}},
		Labels: Object{{"app", gatewayName}, {"istio", "ingressgateway"}}, File: gatewayNamespace + ".yaml",
	})
	s.world.EndpointSlice(gatewayNamespace, gatewayName, gatewayName+"-8fq2x", ready(p), "http2", 8080, created.Add(8*time.Second))
	s.proxyLog(p)
	return p
}

// RouterPod is a gateway's pod: an istio-proxy run as a router (no app,
// no istio-init), owned by the ReplicaSet its name implies.
type RouterPod struct {
	Namespace, Name string
	// Workload is its Deployment, which names its service account too.
	Workload string
	// Host is the pod's host number on worker-a.
	Host    int
	Created time.Time
	Labels  Object
	Ports   []Object
}

// routerPod adds a gateway pod to NAMESPACE.yaml and to the world.
func (s *Shop) routerPod(r RouterPod) *Pod {
	w := s.world
	const node = "worker-a"
	created, started := r.Created, r.Created.Add(4*time.Second)
	p := &Pod{
		Namespace: r.Namespace, Name: r.Name, App: r.Workload, Node: node, IP: podIP(node, r.Host),
		UID: w.objectUID("Pod", r.Namespace, r.Name), Sidecar: ClassicSidecar, Container: "istio-proxy",
		AppStarted: started, ProxyStarted: started, ProxyVersion: istioVersion,
	}
	p.Labels = r.Labels
	replicaSet := withoutLastDashPart(r.Name)
	kubeAPI := "kube-api-access-" + hashHex(w.name, r.Namespace, r.Name, "kapi")[:5]
	env := []Object{
		{{"name", "PILOT_CERT_PROVIDER"}, {"value", "istiod"}},
		{{"name", "CA_ADDR"}, {"value", "istiod.istio-system.svc:15012"}},
		fieldEnv("NODE_NAME", "spec.nodeName"),
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("INSTANCE_IP", "status.podIP"),
		fieldEnv("HOST_IP", "status.hostIP"),
		fieldEnv("SERVICE_ACCOUNT", "spec.serviceAccountName"),
		{{"name", "ISTIO_META_WORKLOAD_NAME"}, {"value", r.Workload}},
		{{"name", "ISTIO_META_OWNER"}, {"value", "kubernetes://apis/apps/v1/namespaces/" + r.Namespace + "/deployments/" + r.Workload}},
		{{"name", "ISTIO_META_MESH_ID"}, {"value", meshDomain}},
		{{"name", "TRUST_DOMAIN"}, {"value", meshDomain}},
		{{"name", "ISTIO_META_CLUSTER_ID"}, {"value", "Kubernetes"}},
	}
	proxy := Object{
		{"args", []string{"proxy", "router", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning",
			"--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"}},
		{"env", env},
		{"image", proxyImage}, {"imagePullPolicy", "IfNotPresent"}, {"name", "istio-proxy"},
		{"ports", r.Ports},
		{"readinessProbe", Object{{"failureThreshold", 30}, {"httpGet", Object{{"path", "/healthz/ready"}, {"port", 15021}, {"scheme", "HTTP"}}},
			{"initialDelaySeconds", 1}, {"periodSeconds", 2}, {"successThreshold", 1}, {"timeoutSeconds", 1}}},
		{"resources", Object{{"limits", Object{{"cpu", "2"}, {"memory", "1Gi"}}}, {"requests", Object{{"cpu", "100m"}, {"memory", "128Mi"}}}}},
		{"securityContext", Object{{"allowPrivilegeEscalation", false}, {"capabilities", Object{{"drop", []string{"ALL"}}}}, {"privileged", false},
			{"readOnlyRootFilesystem", true}, {"runAsGroup", 1337}, {"runAsNonRoot", true}, {"runAsUser", 1337}}},
		{"terminationMessagePath", "/dev/termination-log"}, {"terminationMessagePolicy", "File"},
		{"volumeMounts", []Object{
			{{"mountPath", "/var/run/secrets/workload-spiffe-uds"}, {"name", "workload-socket"}},
			{{"mountPath", "/var/run/secrets/credential-uds"}, {"name", "credential-socket"}},
			{{"mountPath", "/var/run/secrets/workload-spiffe-credentials"}, {"name", "workload-certs"}},
			{{"mountPath", "/var/run/secrets/istio"}, {"name", "istiod-ca-cert"}},
			{{"mountPath", "/var/lib/istio/data"}, {"name", "istio-data"}},
			{{"mountPath", "/etc/istio/proxy"}, {"name", "istio-envoy"}},
			{{"mountPath", "/var/run/secrets/tokens"}, {"name", "istio-token"}},
			{{"mountPath", "/etc/istio/pod"}, {"name", "istio-podinfo"}},
			{{"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}, {"name", kubeAPI}, {"readOnly", true}},
		}},
	}
	volumes := append(injectedVolumes(), Object{{"name", kubeAPI}, {"projected", Object{{"defaultMode", 420}, {"sources", []Object{
		{{"serviceAccountToken", Object{{"expirationSeconds", 3607}, {"path", "token"}}}},
		{{"configMap", Object{{"items", []Object{{{"key", "ca.crt"}, {"path", "ca.crt"}}}}, {"name", "kube-root-ca.crt"}}}},
	}}}}})
	w.pods[objectKey{r.Namespace, r.Name}] = p
	s.gateways = append(s.gateways, p)
	w.add(r.Namespace+".yaml", Object{
		{"apiVersion", "v1"}, {"kind", "Pod"},
		{"metadata", w.meta("Pod", r.Namespace, r.Name, created, ObjectMeta{
			Labels: p.Labels,
			Annotations: Object{{"istio.io/rev", "default"}, {"prometheus.io/path", "/stats/prometheus"}, {"prometheus.io/port", "15020"},
				{"prometheus.io/scrape", "true"}},
			Owner: w.rsOwner(r.Namespace, replicaSet),
			Extra: Object{{"generateName", replicaSet + "-"}},
		})},
		{"spec", Object{
			{"containers", []Object{proxy}},
			{"dnsPolicy", "ClusterFirst"}, {"enableServiceLinks", true}, {"nodeName", node}, {"preemptionPolicy", "PreemptLowerPriority"}, {"priority", 0},
			{"restartPolicy", "Always"}, {"schedulerName", "default-scheduler"}, {"securityContext", Object{{"sysctls", []Object{
				{{"name", "net.ipv4.ip_unprivileged_port_start"}, {"value", "0"}}}}}},
			{"serviceAccount", r.Workload}, {"serviceAccountName", r.Workload},
			{"terminationGracePeriodSeconds", 30}, {"tolerations", defaultTolerations()}, {"volumes", volumes},
		}},
		{"status", Object{
			{"conditions", podConditions(created, created.Add(2*time.Second), started.Add(2*time.Second), true, "")},
			{"containerStatuses", []Object{w.containerStatus(r.Namespace, r.Name, "istio-proxy", proxyImage, started, containerState{ready: true})}},
			{"hostIP", nodeOf(node).ip}, {"hostIPs", []Object{{{"ip", nodeOf(node).ip}}}},
			{"phase", "Running"}, {"podIP", p.IP}, {"podIPs", []Object{{{"ip", p.IP}}}},
			{"qosClass", "Burstable"}, {"startTime", apiTime(created)},
		}},
	})
	return p
}

// GatewayServer is one server of an Istio Gateway.
type GatewayServer struct {
	Port     int
	Name     string
	Protocol string
	Hosts    []string
}

// gatewayResource adds an Istio Gateway in istio-system that selects
// istio-ingressgateway.
func (s *Shop) gatewayResource(name string, created time.Time, servers ...GatewayServer) {
	var out []Object
	for _, sv := range servers {
		out = append(out, Object{{"port", Object{{"number", sv.Port}, {"name", sv.Name}, {"protocol", sv.Protocol}}}, {"hosts", sv.Hosts}})
	}
	s.world.IstioObject("networking.istio.io/v1", "Gateway", gatewayNamespace, name, created,
		Object{{"selector", Object{{"istio", "ingressgateway"}}}, {"servers", out}})
}

// recordGateway saves the gateway's Envoy admin output: its clusters plus
// the background ones, its one HTTP listener and its route configs.
func (s *Shop) recordGateway(p *Pod, clusters []*Cluster, routes []Object) *Sidecar {
	sc := s.recordSidecar(p, clusters, EnvoyState{Listeners: []Listener{{"0.0.0.0_8080", "0.0.0.0", 8080}}, Routes: routes})
	sc.NodeType = "router"
	return sc
}

// gatewayVirtualHost is a virtual host istiod builds for a host of a
// Gateway server: named host:GATEWAY-PORT, matching the host alone.
func gatewayVirtualHost(host string, port int, routes ...Object) Object {
	return Object{{"name", fmt.Sprintf("%s:%d", host, port)}, {"domains", []string{host}}, {"routes", routes}, {"include_request_attempt_count", true}}
}

// gatewayRoute is a route of a VirtualService bound to a Gateway: prefix
// match, to one cluster or weighted clusters.
func gatewayRoute(vsNamespace, vs, routeName, prefix string, clusters []WeightedCluster) Object {
	action := Object{}
	if len(clusters) == 1 {
		action.Set("cluster", clusters[0].Cluster)
	} else {
		var weighted []Object
		for _, c := range clusters {
			weighted = append(weighted, Object{{"name", c.Cluster}, {"weight", c.Weight}})
		}
		action.Set("weighted_clusters", Object{{"clusters", weighted}})
	}
	action = append(action, Object{{"timeout", "0s"}, {"retry_policy", defaultRetry()}, {"max_grpc_timeout", "0s"}}...)
	return Object{
		{"match", Object{{"prefix", prefix}, {"case_sensitive", true}}},
		{"route", action},
		{"metadata", Object{{"filter_metadata", Object{{"istio", Object{{"config", "/apis/networking.istio.io/v1/namespaces/" + vsNamespace + "/virtual-service/" + vs}}}}}}},
		{"decorator", Object{{"operation", clusters[0].Cluster[len("outbound|"):] + prefix + "*"}}},
		{"name", routeName},
	}
}

// IngressCall is one request through the gateway.
type IngressCall struct {
	At   time.Time
	Host string
	Path string
	// To is the pod the request reached, nil when it reached none (NR,
	// UH); Service and Subset name the cluster it was routed to ("" for
	// none).
	To              *Pod
	Service, Subset string
	// Code defaults to 200; Flags, Details and Route to the success's.
	Code                  int
	Flags, Details, Route string
	// TransportFailure is upstream_transport_failure_reason ("" for none).
	TransportFailure string
	// Tunnel: To is in ambient, so the gateway reaches it through an HBONE
	// tunnel (upstream host envoy://connect_originate/IP:8080, upstream
	// local address the internal client's) and no sidecar logs it; ToIP
	// is the address it tunnelled to when To is a pod already gone.
	Tunnel bool
	ToIP   string
}

// ingressCall logs a request through the gateway: its line in the
// gateway's access log, the upstream sidecar's inbound line when it
// reached a pod, and the gateway's istio_requests_total.
func (s *Shop) ingressCall(gw *Pod, c IngressCall) {
	rng := s.rng
	code := c.Code
	if code == 0 {
		code = 200
	}
	flags, details := firstNonEmpty(c.Flags, "-"), firstNonEmpty(c.Details, "via_upstream")
	cluster, upstreamHost, upstreamLocal := "-", "-", "-"
	if c.Service != "" {
		cluster = fmt.Sprintf("outbound|8080|%s|%s.shop.svc.%s", c.Subset, c.Service, meshDomain)
	}
	switch {
	case c.Tunnel:
		upstreamHost = "envoy://connect_originate/" + firstNonEmpty(c.ToIP, c.To.IP) + ":8080"
		upstreamLocal = "envoy://internal_client_address/"
	case c.To != nil:
		upstreamHost = c.To.IP + ":8080"
		upstreamLocal = fmt.Sprintf("%s:%d", gw.IP, 30000+rng.IntN(30000))
	}
	duration, tx := 0, 0
	switch {
	case code == 200:
		duration, tx = 2+rng.IntN(14), 400+rng.IntN(900)
	case flags == "UH":
		tx = 19
	}
	client := fmt.Sprintf("198.51.100.%d", 10+rng.IntN(200))
	port := 30000 + rng.IntN(30000)
	requestID := randomUUID(rng)
	s.world.log(gw.Namespace, gw.Name, "istio-proxy", false, s.accessLine(AccessEntry{
		Start: c.At, Method: "GET", Path: c.Path, Code: code, Flags: flags, Details: details,
		UpstreamHost: upstreamHost, Cluster: cluster, UpstreamLocal: upstreamLocal,
		DownstreamLocal: gw.IP + ":8080", DownstreamRemote: gatewayClient + ":" + strconv.Itoa(port),
		Authority: c.Host, ForwardedFor: client, UserAgent: "Mozilla/5.0", RequestID: requestID,
		TxBytes: tx, DurationMs: duration, Route: firstNonEmpty(c.Route, "-"), TransportFailure: c.TransportFailure,
	}))
	service, namespace := c.Host, "unknown"
	if c.Service != "" {
		service, namespace = c.Service, "shop"
	}
	s.requests = append(s.requests, request{gw, c.At, code, flags, service, namespace, c.To})
	if c.To != nil && !c.Tunnel {
		s.world.log(c.To.Namespace, c.To.Name, "istio-proxy", false, s.accessLine(AccessEntry{
			Start: c.At.Add(time.Millisecond), Method: "GET", Path: c.Path, Code: code, Flags: "-", Details: "via_upstream",
			UpstreamHost: upstreamHost, Cluster: "inbound|8080||", UpstreamLocal: fmt.Sprintf("127.0.0.6:%d", 30000+rng.IntN(30000)),
			DownstreamLocal: upstreamHost, DownstreamRemote: fmt.Sprintf("%s:%d", gw.IP, port+7),
			Authority: c.Host, ForwardedFor: client, UserAgent: "Mozilla/5.0", RequestID: requestID,
			TxBytes: tx, DurationMs: max(duration-1, 1),
			SNI: fmt.Sprintf("outbound_.8080_.%s_.%s.shop.svc.%s", c.Subset, c.Service, meshDomain),
		}))
	}
}
