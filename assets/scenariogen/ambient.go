package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Ambient mode in the shop: a namespace in ambient, pods enrolled by the
// CNI (no sidecar), ztunnel on every node, waypoints, NetworkPolicies and
// AuthorizationPolicies, and what ztunnel and a waypoint log and serve.
// ztunnel's lines are written in the shape ztunnel 1.24 writes them
// (probes/parse/ztunnel/testdata/SOURCES.md).

const ztunnelImage = "docker.io/istio/ztunnel:" + istioVersion

// ambientNamespace adds namespace shop labelled into ambient, with
// extra labels (a namespace-wide waypoint).
func (s *Shop) ambientNamespace(extra Object) {
	labels := Object{{"istio.io/dataplane-mode", "ambient"}, {"kubernetes.io/metadata.name", "shop"}}
	for _, f := range extra {
		labels.Set(f.Key, f.Value)
	}
	w := s.world
	w.add("namespaces.yaml", Object{
		{"apiVersion", "v1"}, {"kind", "Namespace"},
		{"metadata", w.meta("Namespace", "", "shop", s.shopCreated, ObjectMeta{Labels: labels})},
		{"spec", Object{{"finalizers", []string{"kubernetes"}}}},
		{"status", Object{{"phase", "Active"}}},
	})
}

// inAmbient makes a shop pod an ambient one: no sidecar, enrolled by the
// CNI (enrolled false: the labels put it in ambient, the CNI did not).
func inAmbient(p *PodSpec, enrolled bool) {
	p.Sidecar = NoSidecar
	if enrolled {
		p.ExtraAnnotations = append(p.ExtraAnnotations, Field{"ambient.istio.io/redirection", "enabled"})
	}
}

// ztunnels adds ztunnel's DaemonSet pods as the ztunnel chart runs them
// (container istio-proxy, label app=ztunnel), one a node: onA on worker-a,
// onB on worker-b, onC on worker-c. It returns them by node.
func (s *Shop) ztunnels(onA, onB, onC string) map[string]*Pod {
	out := map[string]*Pod{}
	created := s.now.Add(-(9*day + 2*time.Hour))
	for _, z := range []NamedPod{{onA, "worker-a"}, {onB, "worker-b"}, {onC, "worker-c"}} {
		name, node := z.Name, z.Node
		out[node] = s.systemPod(name, node, 3, created, Object{{"app", "ztunnel"}, {"app.kubernetes.io/name", "ztunnel"},
			{"controller-revision-hash", "7b8c9d6f5"}, {"pod-template-generation", "1"}, {"sidecar.istio.io/inject", "false"}},
			Object{{"apiVersion", "apps/v1"}, {"blockOwnerDeletion", true}, {"controller", true}, {"kind", "DaemonSet"},
				{"name", "ztunnel"}, {"uid", s.world.objectUID("DaemonSet", "istio-system", "ztunnel")}},
			"ztunnel", ztunnelImage, []string{"proxy", "ztunnel"}, 15021)
		s.world.log("istio-system", name, "istio-proxy", false, ztunnelStartup(created.Add(3*time.Second))...)
	}
	return out
}

// systemPod is a pod of one istio-proxy container (ztunnel, a waypoint).
func (s *Shop) systemPod(name, node string, host int, created time.Time, labels, owner Object, sa, image string, args []string, readyPort int) *Pod {
	return s.proxyPod("istio-system", name, node, host, created, labels, owner, sa, image, args, readyPort, true)
}

func (s *Shop) proxyPod(ns, name, node string, host int, created time.Time, labels, owner Object, sa, image string, args []string, readyPort int, ready bool) *Pod {
	w := s.world
	ip := podIP(node, host)
	started := created.Add(4 * time.Second)
	p := &Pod{Namespace: ns, Name: name, App: sa, Node: node, IP: ip, UID: w.objectUID("Pod", ns, name), Sidecar: NoSidecar,
		Container: "istio-proxy", AppStarted: started, ProxyStarted: started, Labels: labels, ProxyVersion: istioVersion}
	w.pods[objectKey{ns, name}] = p
	readyAt := started.Add(2 * time.Second)
	state := containerState{ready: ready}
	message := ""
	if !ready {
		message = "containers with unready status: [istio-proxy]"
	}
	w.add(ns+".yaml", Object{
		{"apiVersion", "v1"}, {"kind", "Pod"},
		{"metadata", w.meta("Pod", ns, name, created, ObjectMeta{Labels: labels, Owner: owner,
			Annotations: Object{{"prometheus.io/path", "/stats/prometheus"}, {"prometheus.io/port", "15020"}, {"prometheus.io/scrape", "true"}},
			Extra:       Object{{"generateName", withoutLastDashPart(name) + "-"}}})},
		{"spec", Object{
			{"containers", []Object{{
				{"args", args}, {"image", image}, {"imagePullPolicy", "IfNotPresent"}, {"name", "istio-proxy"},
				{"ports", []Object{{{"containerPort", 15020}, {"name", "metrics"}, {"protocol", "TCP"}}, {{"containerPort", 15021}, {"name", "status-port"}, {"protocol", "TCP"}}}},
				{"readinessProbe", Object{{"failureThreshold", 4}, {"httpGet", Object{{"path", "/healthz/ready"}, {"port", readyPort}, {"scheme", "HTTP"}}},
					{"periodSeconds", 15}, {"successThreshold", 1}, {"timeoutSeconds", 1}}},
				{"resources", Object{{"requests", Object{{"cpu", "200m"}, {"memory", "512Mi"}}}}},
				{"terminationMessagePath", "/dev/termination-log"}, {"terminationMessagePolicy", "File"},
			}}},
			{"dnsPolicy", "ClusterFirst"}, {"enableServiceLinks", true}, {"nodeName", node}, {"preemptionPolicy", "PreemptLowerPriority"}, {"priority", 0},
			{"restartPolicy", "Always"}, {"schedulerName", "default-scheduler"}, {"securityContext", Object{}},
			{"serviceAccount", sa}, {"serviceAccountName", sa},
			{"terminationGracePeriodSeconds", 30}, {"tolerations", defaultTolerations()},
		}},
		{"status", proxyPodStatus(w, ns, name, node, ip, image, created, started, readyAt, state, message)},
	})
	return p
}

func ztunnelStartup(start time.Time) []string {
	line := func(after time.Duration, level, scope, msg string) string {
		return agentTime(start.Add(after)) + "\t" + level + "\t" + scope + "\t" + msg
	}
	return []string{
		line(0, "info", "ztunnel", `version: version.BuildInfo{Version:"`+istioVersion+`", GitRevision:"7f6a2b9c", RustVersion:"1.82.0", BuildProfile:"release", BuildStatus:"Clean", GitTag:"`+istioVersion+`", IstioVersion:"`+istioVersion+`"}`),
		line(18*time.Millisecond, "info", "app", "in-pod mode enabled"),
		line(61*time.Millisecond, "info", "xds::client:xds{id=1}", "Stream established"),
		line(64*time.Millisecond, "info", "xds::client:xds{id=1}", "received response type_url=\"type.googleapis.com/istio.workload.Address\" size=41 removes=0"),
		line(71*time.Millisecond, "info", "inpod::statemanager", "pod received snapshot sent"),
		line(2*time.Second, "info", "readiness", "Task 'proxy' complete (2.003s), still awaiting 0 tasks"),
	}
}

// ZConn is one connection ztunnel logs, from one side.
type ZConn struct {
	At   time.Time
	From *Pod
	// To is the pod the connection goes to (the waypoint's when it goes
	// through one); Target the pod the tunnel is for.
	To, Target *Pod
	Service    string // short name, in shop
	Port       int    // the app's port
	// Plaintext: sent as TCP to the app's port, without HBONE.
	Plaintext  bool
	Inbound    bool
	Sent, Recv int
	DurationMs int
	Error      string
}

// ztunnelLine renders c as ztunnel's access line.
func (s *Shop) ztunnelLine(c ZConn) string {
	level := "info"
	if c.Error != "" {
		level = "error"
	}
	identity := func(p *Pod) string {
		return fmt.Sprintf("spiffe://%s/ns/%s/sa/%s", meshDomain, p.Namespace, p.App)
	}
	ephemeral := 32768 + s.rng.IntN(28000)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%s\taccess\tconnection complete\tsrc.addr=%s:%d", agentTime(c.At), level, c.From.IP, ephemeral)
	if !c.Plaintext {
		fmt.Fprintf(&b, " src.workload=%q src.namespace=%q src.identity=%q", c.From.Name, c.From.Namespace, identity(c.From))
	}
	to := c.To
	if to == nil {
		to = c.Target
	}
	if c.Plaintext {
		fmt.Fprintf(&b, " dst.addr=%s:%d", to.IP, c.Port)
	} else {
		fmt.Fprintf(&b, " dst.addr=%s:15008 dst.hbone_addr=%s:%d", to.IP, c.Target.IP, c.Port)
	}
	fmt.Fprintf(&b, " dst.service=%q dst.workload=%q dst.namespace=%q dst.identity=%q", c.Service+".shop.svc."+meshDomain, to.Name, to.Namespace, identity(to))
	direction := "outbound"
	if c.Inbound {
		direction = "inbound"
	}
	fmt.Fprintf(&b, " direction=%q bytes_sent=%d bytes_recv=%d duration=\"%dms\"", direction, c.Sent, c.Recv, c.DurationMs)
	if c.Error != "" {
		fmt.Fprintf(&b, " error=%q", c.Error)
	}
	return b.String()
}

// ztunnelLog writes c to the ztunnel of node.
func (s *Shop) ztunnelLog(z map[string]*Pod, node string, c ZConn) {
	s.world.log("istio-system", z[node].Name, "istio-proxy", false, s.ztunnelLine(c))
}

// ZService is a service as ztunnel holds it.
type ZService struct {
	Name, VIP string
	Port      int
	Pods      []*Pod
	Waypoint  string // its waypoint's hostname, "" for none
}

// recordZtunnelConfig writes ztunnel's /config_dump on node's ztunnel:
// the workloads (HBONE for enrolled pods, TCP for the others) and
// services, as the list layout newer ztunnels print.
func (s *Shop) recordZtunnelConfig(z *Pod, workloads []*Pod, enrolled map[*Pod]bool, services []ZService) {
	var ws []Object
	sorted := append([]*Pod(nil), workloads...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		proto := "TCP"
		if enrolled[p] {
			proto = "HBONE"
		}
		ws = append(ws, Object{
			{"uid", "Kubernetes//Pod/" + p.Namespace + "/" + p.Name}, {"workloadIps", []string{p.IP}}, {"protocol", proto},
			{"name", p.Name}, {"namespace", p.Namespace}, {"serviceAccount", p.App}, {"workloadName", p.App}, {"workloadType", "deployment"},
			{"canonicalName", p.App}, {"canonicalRevision", "latest"}, {"clusterId", "Kubernetes"}, {"trustDomain", meshDomain},
			{"node", p.Node}, {"status", "Healthy"},
		})
	}
	var ss []Object
	for _, svc := range services {
		host := svc.Name + ".shop.svc." + meshDomain
		var eps []Object
		for _, p := range svc.Pods {
			eps = append(eps, Object{{"workloadUid", "Kubernetes//Pod/" + p.Namespace + "/" + p.Name}, {"service", "shop/" + host},
				{"address", "/" + p.IP}, {"port", Object{{fmt.Sprint(svc.Port), svc.Port}}}})
		}
		o := Object{{"name", svc.Name}, {"namespace", "shop"}, {"hostname", host}, {"vips", []string{"/" + svc.VIP}},
			{"ports", Object{{fmt.Sprint(svc.Port), svc.Port}}}}
		if svc.Waypoint != "" {
			o.Set("waypoint", Object{{"destination", "shop/" + svc.Waypoint}, {"hboneMtlsPort", 15008}})
		}
		o.Set("endpoints", eps)
		o.Set("subjectAltNames", []string{})
		ss = append(ss, o)
	}
	dump := Object{{"workloads", ws}, {"services", ss}, {"policies", []Object{}}, {"certificates", []Object{}}}
	s.addFile("envoy/istio-system/"+z.Name+"/config_dump.json", indentedJSON(dump, 2))
}

func (s *Shop) addFile(path, text string) {
	if s.extraFiles == nil {
		s.extraFiles = map[string]string{}
	}
	s.extraFiles[path] = text
}

// networkPolicy adds a NetworkPolicy to shop.
func (s *Shop) networkPolicy(name string, created time.Time, spec Object) {
	w := s.world
	w.add("shop.yaml", Object{
		{"apiVersion", "networking.k8s.io/v1"}, {"kind", "NetworkPolicy"},
		{"metadata", w.meta("NetworkPolicy", "shop", name, created, ObjectMeta{Extra: Object{{"generation", 1}}})},
		{"spec", spec},
	})
}

func (s *Shop) authorizationPolicy(name string, created time.Time, spec any) {
	s.istio("security.istio.io/v1", "AuthorizationPolicy", name, created, spec)
}

// NamedPod is a pod the story names, on the node it runs on.
type NamedPod struct{ Name, Node string }

// WaypointSpec is a waypoint of shop as the story tells it.
type WaypointSpec struct {
	Name    string
	Created time.Time
	// Ready: its pods are ready and the Gateway has its status address.
	Ready bool
	// Pods are NAME-HASH-XXXXX, of its Deployment's one ReplicaSet.
	Pods []NamedPod
	// Slice names its Service's EndpointSlice.
	Slice string
}

// Waypoint is a waypoint of shop: its Gateway, Service and pods.
type Waypoint struct {
	Name string
	Pods []*Pod
	VIP  string
}

// waypoint adds a waypoint to shop as istiod's deployment controller
// leaves it: the Gateway (class istio-waypoint, HBONE on 15008), its
// Service and its pods.
func (s *Shop) waypoint(spec WaypointSpec) *Waypoint {
	w := s.world
	name, created, ready := spec.Name, spec.Created, spec.Ready
	wp := &Waypoint{Name: name, VIP: fmt.Sprintf("10.96.40.%d", 60+len(w.services))}
	status := Object{{"conditions", []Object{
		{{"lastTransitionTime", apiTime(created.Add(2 * time.Second))}, {"message", "Resource accepted"}, {"observedGeneration", 1}, {"reason", "Accepted"}, {"status", "True"}, {"type", "Accepted"}},
		{{"lastTransitionTime", apiTime(created.Add(9 * time.Second))}, {"message", "Resource programmed, assigned to service(s) " + name + ".shop.svc.cluster.local:15008"}, {"observedGeneration", 1}, {"reason", "Programmed"}, {"status", "True"}, {"type", "Programmed"}},
	}}}
	if ready {
		status = append(Object{{"addresses", []Object{{{"type", "Hostname"}, {"value", name + ".shop.svc." + meshDomain}}}}}, status...)
	} else {
		status = Object{{"conditions", []Object{
			{{"lastTransitionTime", apiTime(created.Add(2 * time.Second))}, {"message", "Resource accepted"}, {"observedGeneration", 1}, {"reason", "Accepted"}, {"status", "True"}, {"type", "Accepted"}},
			{{"lastTransitionTime", apiTime(created.Add(9 * time.Second))}, {"message", "Deployment " + name + " has 0/1 ready replicas"}, {"observedGeneration", 1}, {"reason", "Pending"}, {"status", "False"}, {"type", "Programmed"}},
		}}}
	}
	w.add("shop.yaml", Object{
		{"apiVersion", "gateway.networking.k8s.io/v1"}, {"kind", "Gateway"},
		{"metadata", w.meta("Gateway", "shop", name, created, ObjectMeta{Labels: Object{{"istio.io/waypoint-for", "service"}}, Extra: Object{{"generation", 1}}})},
		{"spec", Object{{"gatewayClassName", "istio-waypoint"}, {"listeners", []Object{{{"allowedRoutes", Object{{"namespaces", Object{{"from", "Same"}}}}}, {"name", "mesh"}, {"port", 15008}, {"protocol", "HBONE"}}}}}},
		{"status", status},
	})
	gwLabels := Object{{"gateway.istio.io/managed", "istio.io-mesh-controller"}, {"gateway.networking.k8s.io/gateway-class-name", "istio-waypoint"},
		{"gateway.networking.k8s.io/gateway-name", name}, {"istio.io/waypoint-for", "service"}}
	w.Service(ServiceSpec{Namespace: "shop", Name: name, ClusterIP: wp.VIP, Selector: Object{{"gateway.networking.k8s.io/gateway-name", name}},
		Created: created.Add(time.Second), Ports: []ServicePort{{"status-port", 15021, 15021}, {"mesh", 15008, 15008}}, Labels: gwLabels})
	for i, pod := range spec.Pods {
		podName, node := pod.Name, pod.Node
		replicaSet := withoutLastDashPart(podName)
		hash := lastDashPart(replicaSet)
		if replicaSet != name+"-"+hash {
			panic(fmt.Sprintf("waypoint %s: pod %s is not NAME-HASH-XXXXX", name, podName))
		}
		owner := w.rsOwner("shop", replicaSet)
		labels := Object{{"gateway.istio.io/managed", "istio.io-mesh-controller"}, {"gateway.networking.k8s.io/gateway-class-name", "istio-waypoint"},
			{"gateway.networking.k8s.io/gateway-name", name}, {"istio.io/dataplane-mode", "none"}, {"istio.io/waypoint-for", "service"},
			{"pod-template-hash", hash}, {"service.istio.io/canonical-name", name}, {"service.istio.io/canonical-revision", "latest"},
			{"sidecar.istio.io/inject", "false"}}
		p := s.proxyPod("shop", podName, node, 30+i, created.Add(3*time.Second), labels, owner, name, proxyImage,
			[]string{"proxy", "waypoint", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--serviceCluster", name + ".$(POD_NAMESPACE)"}, 15021, ready)
		wp.Pods = append(wp.Pods, p)
	}
	s.slice(Slice{Name: spec.Slice, Service: name, Endpoints: endpointsOf(wp.Pods, ready), Port: 15008, PortName: "mesh"})
	return wp
}

func endpointsOf(pods []*Pod, ready bool) []Endpoint {
	out := make([]Endpoint, len(pods))
	for i, p := range pods {
		out[i] = Endpoint{Pod: p.Name, Ready: ready, Serving: ready}
	}
	return out
}

// useWaypoint labels shop's Service name with istio.io/use-waypoint and
// writes istiod's status condition on it (reason "" for bound).
func (s *Shop) useWaypoint(service, waypoint, reason, message string, at time.Time) {
	for _, obj := range s.world.manifests["shop.yaml"] {
		if kind, _ := obj.Get("kind"); kind != "Service" {
			continue
		}
		meta, _ := obj.Get("metadata")
		m := meta.(Object)
		if name, _ := m.Get("name"); name != service {
			continue
		}
		labels, _ := m.Get("labels")
		l := labels.(Object)
		l = append(l, Field{"istio.io/use-waypoint", waypoint})
		m.Set("labels", l)
		cond := Object{{"lastTransitionTime", apiTime(at)}, {"message", "Successfully attached to waypoint shop/" + waypoint},
			{"reason", "WaypointAccepted"}, {"status", "True"}, {"type", "istio.io/WaypointBound"}}
		if reason != "" {
			cond = Object{{"lastTransitionTime", apiTime(at)}, {"message", message}, {"reason", reason}, {"status", "False"}, {"type", "istio.io/WaypointBound"}}
		}
		obj.Set("status", Object{{"conditions", []Object{cond}}, {"loadBalancer", Object{}}})
		return
	}
	panic("useWaypoint: no Service " + service)
}

// recordWaypoint writes the waypoint pod's /clusters?format=json: its
// cluster for service on port, each host an HBONE tunnel to a pod.
func (s *Shop) recordWaypoint(wp *Pod, service string, port int, pods []*Pod, unhealthy map[*Pod]bool) {
	var hosts []Object
	for _, p := range pods {
		health := Object{{"eds_health_status", "HEALTHY"}}
		if unhealthy[p] {
			health = Object{{"failed_outlier_check", true}, {"eds_health_status", "HEALTHY"}}
		}
		hosts = append(hosts, Object{
			{"address", Object{{"envoy_internal_address", Object{{"server_listener_name", "connect_originate"}, {"endpoint_id", fmt.Sprintf("%s:%d", p.IP, port)}}}}},
			{"stats", []Object{{{"name", "cx_connect_fail"}}, {{"value", fmt.Sprint(3 + s.rng.IntN(20))}, {"name", "cx_total"}},
				{{"name", "rq_error"}}, {{"value", fmt.Sprint(400 + s.rng.IntN(900))}, {"name", "rq_success"}}}},
			{"health_status", health}, {"weight", 1}, {"locality", Object{{"region", region}, {"zone", nodeOf(p.Node).zone}}},
		})
	}
	clusters := Object{{"cluster_statuses", []Object{
		{{"name", "BlackHoleCluster;"}, {"observability_name", "BlackHoleCluster;"}},
		{{"name", "connect_originate;"}, {"observability_name", "connect_originate;"}},
		{{"name", fmt.Sprintf("inbound-vip|%d|http|%s.shop.svc.%s;", port, service, meshDomain)}, {"added_via_api", true}, {"host_statuses", hosts},
			{"observability_name", fmt.Sprintf("inbound-vip|%d|http|%s.shop.svc.%s;", port, service, meshDomain)}},
		{{"name", "main_internal;"}, {"observability_name", "main_internal;"}},
	}}}
	s.addFile("envoy/"+wp.Namespace+"/"+wp.Name+"/clusters.json", indentedJSON(clusters, 2))
}

// proxyPodStatus: a ready pod runs; one that is not is Pending, its image
// not pulled (ImagePullBackOff).
func proxyPodStatus(w *World, ns, name, node, ip, image string, created, started, readyAt time.Time, state containerState, message string) Object {
	cs := w.containerStatus(ns, name, "istio-proxy", image, started, state)
	phase := "Running"
	if !state.ready {
		phase = "Pending"
		cs = Object{{"image", image}, {"imageID", ""}, {"lastState", Object{}}, {"name", "istio-proxy"}, {"ready", false},
			{"restartCount", 0}, {"started", false}, {"state", Object{{"waiting", Object{
				{"message", "Back-off pulling image \"" + image + "\""}, {"reason", "ImagePullBackOff"}}}}}}
	}
	return Object{
		{"conditions", podConditions(created, created.Add(time.Second), readyAt, state.ready, message)},
		{"containerStatuses", []Object{cs}},
		{"hostIP", nodeOf(node).ip}, {"hostIPs", []Object{{{"ip", nodeOf(node).ip}}}},
		{"phase", phase}, {"podIP", ip}, {"podIPs", []Object{{{"ip", ip}}}},
		{"qosClass", "Burstable"}, {"startTime", apiTime(created.Add(time.Second))},
	}
}
