package main

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// SidecarMode is how istio-proxy runs in a pod.
type SidecarMode string

const (
	// ClassicSidecar is a regular container, after the app unless Hold.
	ClassicSidecar SidecarMode = "classic"
	// NativeSidecar is an init container with restartPolicy Always
	// (ENABLE_NATIVE_SIDECARS).
	NativeSidecar SidecarMode = "native"
	// NoSidecar is a pod outside the mesh.
	NoSidecar SidecarMode = "none"
)

// ContainerPort is one named port of the app container.
type ContainerPort struct {
	Name string
	Port int
}

// HTTPCheck is an HTTP readiness check on the app's port; with a sidecar
// the injector rewrites it to pilot-agent's /app-health endpoint.
type HTTPCheck struct {
	Path string
	Port int
}

// Termination is a container's exit.
type Termination struct {
	// ContainerID is the exited instance's id when it was a previous
	// instance (LastTerminated); a container that exited and was not
	// restarted (ProxyExited) keeps its own id.
	ContainerID           string
	ExitCode              int
	Reason                string
	StartedAt, FinishedAt time.Time
}

// PodSpec describes a pod as the story needs it; World.Pod turns it into
// the object the API server reports after the injector and the kubelet
// did their work. Shop.podSpec fills in the shop's defaults.
type PodSpec struct {
	Namespace, Name, App, Node string
	// Host is the last octet of the pod's IP in its node's pod CIDR.
	Host    int
	Created time.Time
	Image   string
	Ports   []ContainerPort
	// Version is the version label; "" leaves it off.
	Version string
	Sidecar SidecarMode
	// Hold is holdApplicationUntilProxyStarts: a classic sidecar goes
	// first, with a postStart hook that waits for Envoy.
	Hold bool
	// Readiness is the app's HTTP readiness check, or nil for none.
	Readiness *HTTPCheck
	// NoProbeRewrite: the pod carries sidecar.istio.io/rewriteAppHTTPProbers
	// "false", so the injector leaves its probes as they are (the kubelet
	// sends them to the app's port, through the sidecar's inbound).
	NoProbeRewrite bool
	// Probe, when set, is the app's readiness probe verbatim (an exec probe
	// the injector leaves alone); it wins over Readiness.
	Probe Object
	Env   []Object
	// Args are the app container's args.
	Args []string
	// SecurityContext is the app container's securityContext, nil for
	// none.
	SecurityContext Object
	// PreStop is the app container's preStop exec command.
	PreStop []string
	// Controller names the pod's owner; generateName is Controller + "-".
	// Unless Owner is set it is a ReplicaSet, which also gives the pod its
	// pod-template-hash label.
	Controller string
	// Owner is the owner reference of a controller that is not a
	// ReplicaSet (a Job, a StatefulSet).
	Owner Object
	// Zero start times follow the kubelet's order: init containers, then
	// the proxy, then the app (after the proxy when native or Hold).
	AppStarted, ProxyStarted time.Time
	AppReady, ProxyReady     bool
	Restarts                 int
	LastTerminated           *Termination
	// ProxyExited is set when istio-proxy has already terminated.
	ProxyExited *Termination
	// ReadyAt defaults to 3 s after the later of the two starts.
	ReadyAt      time.Time
	ReadyMessage string
	// Deletion is the deletionTimestamp of a terminating pod.
	Deletion                      time.Time
	ExtraLabels, ExtraAnnotations Object
	// InjectLabel is the sidecar.istio.io/inject label, "" for none.
	InjectLabel    string
	ProxyResources Object
	RestartPolicy  string
	// ProxyVersion is the Istio release of the pod's proxy (its image and
	// the ISTIO_VERSION it reports); "" is the mesh's (istioVersion). A pod
	// injected before an in-place upgrade of istiod keeps its old one.
	ProxyVersion string
}

// Pod is a pod of the world: what logs, Envoy output and EndpointSlices
// need to know about it. A Pod without a manifest is a ghost: a pod that
// is gone but whose address lingers in some proxy's EDS.
type Pod struct {
	Namespace, Name, App, Node, IP, UID string
	Sidecar                             SidecarMode
	// Container is the app container's name.
	Container                string
	AppStarted, ProxyStarted time.Time
	Labels                   Object
	// ProxyVersion is the Istio release its proxy runs.
	ProxyVersion string
	proxyExited  bool
}

// proxyImageOf is the proxy image of an Istio release ("": the mesh's).
func proxyImageOf(version string) string {
	if version == "" {
		return proxyImage
	}
	return "docker.io/istio/proxyv2:" + version
}

// ProxyID is the pod's Envoy node id as istiod names it.
func (p *Pod) ProxyID() string { return p.Name + "." + p.Namespace }

func (p *Pod) label(key, fallback string) string {
	if v, ok := p.Labels.Get(key); ok {
		return v.(string)
	}
	return fallback
}

// ghost is a pod that no longer exists; only its address and app remain.
func ghost(ip, name string) *Pod {
	return &Pod{Namespace: "shop", Name: name, App: "orders", IP: ip, Sidecar: NoSidecar}
}

// Pod adds the pod to NAMESPACE.yaml and to the world.
func (w *World) Pod(s PodSpec) *Pod {
	ns, name := s.Namespace, s.Name
	meshed := s.Sidecar != NoSidecar
	times := startTimes(s)
	p := &Pod{
		Namespace: ns, Name: name, App: s.App, Node: s.Node,
		IP:           podIP(s.Node, s.Host),
		UID:          w.objectUID("Pod", ns, name),
		Sidecar:      s.Sidecar,
		Container:    s.App,
		AppStarted:   times.app,
		ProxyStarted: times.proxy,
		ProxyVersion: firstNonEmpty(s.ProxyVersion, istioVersion),
		proxyExited:  meshed && s.ProxyExited != nil,
	}
	labels, annotations := podLabels(s), podAnnotations(s, p.Container)
	p.Labels = labels

	owner := s.Owner
	if owner == nil && s.Controller != "" {
		owner = w.rsOwner(ns, s.Controller)
	}
	kubeAPI := "kube-api-access-" + hashHex(w.name, ns, name, "kapi")[:5]
	app, probers := appContainer(s, p.Container, kubeAPI)
	containers := []Object{app}
	var initContainers []Object
	volumes := []Object{{{"name", kubeAPI}, {"projected", Object{{"defaultMode", 420}, {"sources", []Object{
		{{"serviceAccountToken", Object{{"expirationSeconds", 3607}, {"path", "token"}}}},
		{{"configMap", Object{{"items", []Object{{{"key", "ca.crt"}, {"path", "ca.crt"}}}}, {"name", "kube-root-ca.crt"}}}},
		{{"downwardAPI", Object{{"items", []Object{{{"fieldRef", Object{{"apiVersion", "v1"}, {"fieldPath", "metadata.namespace"}}}, {"path", "namespace"}}}}}}},
	}}}}}}
	if meshed {
		proxy, iptables := injectedContainers(s, p.Container, kubeAPI, probers)
		initContainers = append(initContainers, iptables)
		switch {
		case s.Sidecar == NativeSidecar:
			proxy.Set("restartPolicy", "Always")
			initContainers = append(initContainers, proxy)
		case s.Hold:
			proxy.Set("lifecycle", Object{{"postStart", Object{{"exec", Object{{"command", []string{"pilot-agent", "wait"}}}}}}})
			containers = append([]Object{proxy}, containers...)
		default:
			containers = append(containers, proxy)
		}
		volumes = append(injectedVolumes(), volumes...)
	}

	metaExtra := Object{{"generateName", firstNonEmpty(s.Controller, withoutLastDashPart(name)) + "-"}}
	if !s.Deletion.IsZero() {
		metaExtra.Set("deletionGracePeriodSeconds", 30)
		metaExtra.Set("deletionTimestamp", apiTime(s.Deletion))
	}
	metadata := w.meta("Pod", ns, name, s.Created, ObjectMeta{Labels: labels, Annotations: annotations, Owner: owner, Extra: metaExtra})
	spec := Object{
		{"containers", containers},
		{"dnsPolicy", "ClusterFirst"}, {"enableServiceLinks", true}, {"nodeName", s.Node}, {"preemptionPolicy", "PreemptLowerPriority"}, {"priority", 0},
		{"restartPolicy", s.RestartPolicy}, {"schedulerName", "default-scheduler"}, {"securityContext", Object{}},
		{"serviceAccount", s.App}, {"serviceAccountName", s.App},
		{"terminationGracePeriodSeconds", 30}, {"tolerations", defaultTolerations()}, {"volumes", volumes},
	}
	if len(initContainers) > 0 {
		spec.Set("initContainers", initContainers)
	}
	w.pods[objectKey{ns, name}] = p
	w.add(ns+".yaml", Object{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", spec}, {"status", w.podStatus(s, p, times)}})
	return p
}

// podTimes is when the kubelet got through a pod's start.
type podTimes struct {
	initDone, proxy, app, ready time.Time
}

// startTimes fills in the times the spec leaves zero, in the kubelet's
// order: init containers, then the proxy, then the app.
func startTimes(s PodSpec) podTimes {
	t := podTimes{initDone: s.Created.Add(2 * time.Second), proxy: s.ProxyStarted, app: s.AppStarted, ready: s.ReadyAt}
	if s.Sidecar == NoSidecar {
		t.initDone = s.Created.Add(time.Second)
	}
	if t.proxy.IsZero() {
		t.proxy = t.initDone.Add(time.Second)
	}
	if t.app.IsZero() {
		if s.Sidecar == NativeSidecar || (s.Sidecar == ClassicSidecar && s.Hold) {
			// The kubelet starts the app only once the native sidecar's
			// startupProbe passed, or (Hold) once istio-proxy's postStart
			// ` + "`pilot-agent wait`" + ` returned.
			t.app = t.proxy.Add(2 * time.Second)
		} else {
			t.app = t.initDone.Add(time.Second)
		}
	}
	if t.ready.IsZero() {
		t.ready = t.app
		if t.proxy.After(t.ready) {
			t.ready = t.proxy
		}
		t.ready = t.ready.Add(3 * time.Second)
	}
	return t
}

func podLabels(s PodSpec) Object {
	labels := Object{{"app", s.App}}
	if s.Owner == nil {
		labels.Set("pod-template-hash", lastDashPart(firstNonEmpty(s.Controller, s.Name)))
	}
	if s.Version != "" {
		labels.Set("version", s.Version)
	}
	if s.InjectLabel != "" {
		labels.Set("sidecar.istio.io/inject", s.InjectLabel)
	}
	if s.Sidecar != NoSidecar {
		labels.Set("security.istio.io/tlsMode", "istio")
		labels.Set("service.istio.io/canonical-name", s.App)
		labels.Set("service.istio.io/canonical-revision", firstNonEmpty(s.Version, "latest"))
	}
	for _, f := range s.ExtraLabels {
		labels.Set(f.Key, f.Value)
	}
	return labels
}

// podAnnotations are the injector's annotations and the spec's extras.
func podAnnotations(s PodSpec, container string) Object {
	var annotations Object
	if s.Sidecar != NoSidecar {
		volumes := []string{"workload-socket", "credential-socket", "workload-certs", "istio-envoy", "istio-data", "istio-podinfo", "istio-token", "istiod-ca-cert"}
		status := Object{{"initContainers", []string{"istio-init"}}, {"containers", []string{"istio-proxy"}}, {"volumes", volumes},
			{"imagePullSecrets", nil}, {"revision", "default"}}
		if s.Sidecar == NativeSidecar {
			status = Object{{"initContainers", []string{"istio-init", "istio-proxy"}}, {"containers", nil}, {"volumes", volumes},
				{"imagePullSecrets", nil}, {"revision", "default"}}
		}
		annotations = Object{
			{"istio.io/rev", "default"},
			{"kubectl.kubernetes.io/default-container", container},
			{"kubectl.kubernetes.io/default-logs-container", container},
			{"prometheus.io/path", "/stats/prometheus"},
			{"prometheus.io/port", "15020"},
			{"prometheus.io/scrape", "true"},
		}
		if s.NoProbeRewrite {
			annotations.Set("sidecar.istio.io/rewriteAppHTTPProbers", "false")
		}
		annotations.Set("sidecar.istio.io/status", compactJSON(status))
	}
	for _, f := range s.ExtraAnnotations {
		annotations.Set(f.Key, f.Value)
	}
	return annotations
}

// appContainer is the app's container after injection, and the
// ISTIO_KUBE_APP_PROBERS value pilot-agent needs to run its rewritten
// readiness check ("" when there is none).
func appContainer(s PodSpec, container, kubeAPI string) (Object, string) {
	var readinessProbe Object
	probers := ""
	if s.Readiness != nil {
		check := Object{{"path", s.Readiness.Path}, {"port", s.Readiness.Port}, {"scheme", "HTTP"}}
		probe := check
		if s.Sidecar != NoSidecar && !s.NoProbeRewrite {
			appHealth := "/app-health/" + container + "/readyz"
			probe = Object{{"path", appHealth}, {"port", 15020}, {"scheme", "HTTP"}}
			probers = compactJSON(Object{{appHealth, Object{{"httpGet", check}, {"timeoutSeconds", 1}}}})
		}
		readinessProbe = Object{{"failureThreshold", 3}, {"httpGet", probe},
			{"initialDelaySeconds", 2}, {"periodSeconds", 5}, {"successThreshold", 1}, {"timeoutSeconds", 1}}
	}
	if s.Probe != nil {
		readinessProbe = s.Probe
	}
	c := Object{}
	if len(s.Args) > 0 {
		c.Set("args", s.Args)
	}
	if len(s.Env) > 0 {
		c.Set("env", s.Env)
	}
	c = append(c, Object{{"image", s.Image}, {"imagePullPolicy", "IfNotPresent"}, {"name", container}}...)
	if len(s.Ports) > 0 {
		var ports []Object
		for _, cp := range s.Ports {
			ports = append(ports, Object{{"containerPort", cp.Port}, {"name", cp.Name}, {"protocol", "TCP"}})
		}
		c.Set("ports", ports)
	}
	c = append(c, Object{
		{"resources", Object{{"limits", Object{{"memory", "512Mi"}}}, {"requests", Object{{"cpu", "250m"}, {"memory", "256Mi"}}}}},
		{"terminationMessagePath", "/dev/termination-log"}, {"terminationMessagePolicy", "File"},
		{"volumeMounts", []Object{{{"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}, {"name", kubeAPI}, {"readOnly", true}}}},
	}...)
	if readinessProbe != nil {
		c.Set("readinessProbe", readinessProbe)
	}
	if s.SecurityContext != nil {
		c.Set("securityContext", s.SecurityContext)
	}
	if len(s.PreStop) > 0 {
		c.Set("lifecycle", Object{{"preStop", Object{{"exec", Object{{"command", s.PreStop}}}}}})
	}
	return c, probers
}

// podStatus is what the kubelet reports: conditions, container states
// (istio-init completed, the proxy running or exited, the app) and IPs.
func (w *World) podStatus(s PodSpec, p *Pod, t podTimes) Object {
	var statuses, initStatuses []Object
	meshed := s.Sidecar != NoSidecar
	if meshed {
		initID := "containerd://" + hashHex(w.name, s.Namespace, s.Name, "istio-init")
		initStatuses = append(initStatuses, Object{
			{"containerID", initID}, {"image", proxyImageOf(s.ProxyVersion)},
			{"imageID", "docker.io/istio/proxyv2@sha256:" + hashHex(proxyImageOf(s.ProxyVersion))}, {"lastState", Object{}}, {"name", "istio-init"},
			{"ready", true}, {"restartCount", 0}, {"started", false},
			{"state", Object{{"terminated", Object{{"containerID", initID}, {"exitCode", 0},
				{"finishedAt", apiTime(t.initDone)}, {"reason", "Completed"}, {"startedAt", apiTime(s.Created.Add(time.Second))}}}}},
		})
		proxyStatus := w.containerStatus(s.Namespace, s.Name, "istio-proxy", proxyImageOf(s.ProxyVersion), t.proxy,
			containerState{ready: s.ProxyReady, terminated: s.ProxyExited})
		if s.Sidecar == NativeSidecar {
			initStatuses = append(initStatuses, proxyStatus)
		} else {
			statuses = append(statuses, proxyStatus)
		}
	}
	statuses = append(statuses, w.containerStatus(s.Namespace, s.Name, p.Container, s.Image, t.app,
		containerState{ready: s.AppReady, restarts: s.Restarts, last: s.LastTerminated}))
	// The API server lists container statuses by name.
	sort.SliceStable(statuses, func(i, j int) bool {
		a, _ := statuses[i].Get("name")
		b, _ := statuses[j].Get("name")
		return a.(string) < b.(string)
	})
	hostIP := nodeOf(s.Node).ip
	status := Object{
		{"conditions", podConditions(s.Created, t.initDone, t.ready, s.AppReady && (s.ProxyReady || !meshed), s.ReadyMessage)},
		{"containerStatuses", statuses},
		{"hostIP", hostIP}, {"hostIPs", []Object{{{"ip", hostIP}}}},
		{"phase", "Running"}, {"podIP", p.IP}, {"podIPs", []Object{{{"ip", p.IP}}}},
		{"qosClass", "Burstable"}, {"startTime", apiTime(s.Created)},
	}
	if len(initStatuses) > 0 {
		status.Set("initContainerStatuses", initStatuses)
	}
	return status
}

// injectedContainers are istio-proxy and istio-init as the sidecar
// injector adds them.
func injectedContainers(s PodSpec, container, kubeAPI, probers string) (proxy, iptables Object) {
	var podPorts []string
	for _, cp := range s.Ports {
		podPorts = append(podPorts, "    "+compactJSON(Object{{"name", cp.Name}, {"containerPort", cp.Port}, {"protocol", "TCP"}}))
	}
	env := []Object{
		{{"name", "PILOT_CERT_PROVIDER"}, {"value", "istiod"}},
		{{"name", "CA_ADDR"}, {"value", "istiod.istio-system.svc:15012"}},
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("INSTANCE_IP", "status.podIP"),
		fieldEnv("SERVICE_ACCOUNT", "spec.serviceAccountName"),
		fieldEnv("HOST_IP", "status.hostIP"),
		resourceEnv("ISTIO_CPU_LIMIT", "limits.cpu"),
		{{"name", "PROXY_CONFIG"}, {"value", "{}\n"}},
		{{"name", "ISTIO_META_POD_PORTS"}, {"value", "[\n" + strings.Join(podPorts, ",\n") + "\n]"}},
		{{"name", "ISTIO_META_APP_CONTAINERS"}, {"value", container}},
		resourceEnv("GOMEMLIMIT", "limits.memory"),
		resourceEnv("GOMAXPROCS", "limits.cpu"),
		{{"name", "ISTIO_META_CLUSTER_ID"}, {"value", "Kubernetes"}},
		fieldEnv("ISTIO_META_NODE_NAME", "spec.nodeName"),
		{{"name", "ISTIO_META_INTERCEPTION_MODE"}, {"value", "REDIRECT"}},
		{{"name", "ISTIO_META_WORKLOAD_NAME"}, {"value", s.App}},
		{{"name", "ISTIO_META_OWNER"}, {"value", "kubernetes://apis/apps/v1/namespaces/" + s.Namespace + "/deployments/" + s.App}},
		{{"name", "ISTIO_META_MESH_ID"}, {"value", meshDomain}},
		{{"name", "TRUST_DOMAIN"}, {"value", meshDomain}},
	}
	if probers != "" {
		env = append(env, Object{{"name", "ISTIO_KUBE_APP_PROBERS"}, {"value", probers}})
	}
	resources := s.ProxyResources
	if resources == nil {
		resources = Object{{"limits", Object{{"cpu", "2"}, {"memory", "1Gi"}}}, {"requests", Object{{"cpu", "100m"}, {"memory", "128Mi"}}}}
	}
	serviceAccountMount := Object{{"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}, {"name", kubeAPI}, {"readOnly", true}}
	proxy = Object{
		{"args", []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning",
			"--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"}},
		{"env", env},
		{"image", proxyImageOf(s.ProxyVersion)}, {"imagePullPolicy", "IfNotPresent"}, {"name", "istio-proxy"},
		{"ports", []Object{{{"containerPort", 15090}, {"name", "http-envoy-prom"}, {"protocol", "TCP"}}}},
		{"readinessProbe", Object{{"failureThreshold", 4}, {"httpGet", Object{{"path", "/healthz/ready"}, {"port", 15021}, {"scheme", "HTTP"}}},
			{"periodSeconds", 15}, {"successThreshold", 1}, {"timeoutSeconds", 3}}},
		{"resources", resources},
		{"securityContext", Object{{"allowPrivilegeEscalation", false}, {"capabilities", Object{{"drop", []string{"ALL"}}}}, {"privileged", false},
			{"readOnlyRootFilesystem", true}, {"runAsGroup", 1337}, {"runAsNonRoot", true}, {"runAsUser", 1337}}},
		{"startupProbe", Object{{"failureThreshold", 600}, {"httpGet", Object{{"path", "/healthz/ready"}, {"port", 15021}, {"scheme", "HTTP"}}},
			{"periodSeconds", 1}, {"successThreshold", 1}, {"timeoutSeconds", 3}}},
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
			serviceAccountMount,
		}},
	}
	iptables = Object{
		{"args", []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-x", "", "-b", "*",
			"-d", "15090,15021,15020", "--log_output_level=default:info"}},
		{"image", proxyImageOf(s.ProxyVersion)}, {"imagePullPolicy", "IfNotPresent"}, {"name", "istio-init"},
		{"resources", resources},
		{"securityContext", Object{{"allowPrivilegeEscalation", false}, {"capabilities", Object{{"add", []string{"NET_ADMIN", "NET_RAW"}}, {"drop", []string{"ALL"}}}},
			{"privileged", false}, {"readOnlyRootFilesystem", false}, {"runAsGroup", 0}, {"runAsNonRoot", false}, {"runAsUser", 0}}},
		{"terminationMessagePath", "/dev/termination-log"}, {"terminationMessagePolicy", "File"},
		{"volumeMounts", []Object{serviceAccountMount}},
	}
	return proxy, iptables
}

func injectedVolumes() []Object {
	return []Object{
		{{"emptyDir", Object{}}, {"name", "workload-socket"}},
		{{"emptyDir", Object{}}, {"name", "credential-socket"}},
		{{"emptyDir", Object{}}, {"name", "workload-certs"}},
		{{"emptyDir", Object{{"medium", "Memory"}}}, {"name", "istio-envoy"}},
		{{"emptyDir", Object{}}, {"name", "istio-data"}},
		{{"downwardAPI", Object{{"defaultMode", 420}, {"items", []Object{
			{{"fieldRef", Object{{"apiVersion", "v1"}, {"fieldPath", "metadata.labels"}}}, {"path", "labels"}},
			{{"fieldRef", Object{{"apiVersion", "v1"}, {"fieldPath", "metadata.annotations"}}}, {"path", "annotations"}},
		}}}}, {"name", "istio-podinfo"}},
		{{"name", "istio-token"}, {"projected", istioTokenProjection()}},
		{{"configMap", Object{{"defaultMode", 420}, {"name", "istio-ca-root-cert"}}}, {"name", "istiod-ca-cert"}},
	}
}

// podConditions are the kubelet's five conditions; a pod that is not
// ready says why.
func podConditions(created, initialized, readyAt time.Time, isReady bool, message string) []Object {
	condition := func(at time.Time, ok bool, kind string) Object {
		status := "False"
		if ok {
			status = "True"
		}
		return Object{{"lastProbeTime", nil}, {"lastTransitionTime", apiTime(at)}, {"status", status}, {"type", kind}}
	}
	out := []Object{
		condition(initialized, true, "PodReadyToStartContainers"),
		condition(initialized, true, "Initialized"),
		condition(readyAt, isReady, "Ready"),
		condition(readyAt, isReady, "ContainersReady"),
		condition(created, true, "PodScheduled"),
	}
	if !isReady {
		for _, i := range []int{2, 3} {
			out[i].Set("reason", "ContainersNotReady")
			if message != "" {
				out[i].Set("message", message)
			}
		}
	}
	return out
}

type containerState struct {
	ready      bool
	restarts   int
	last       *Termination
	terminated *Termination
}

func (w *World) containerStatus(namespace, pod, name, image string, started time.Time, c containerState) Object {
	id := "containerd://" + hashHex(w.name, namespace, pod, name, strconv.Itoa(c.restarts))
	state := Object{{"running", Object{{"startedAt", apiTime(started)}}}}
	if c.terminated != nil {
		state = Object{{"terminated", c.terminated.object(id)}}
	}
	out := Object{
		{"containerID", id},
		{"image", image},
		{"imageID", strings.SplitN(image, ":", 2)[0] + "@sha256:" + hashHex(image)},
		{"lastState", Object{}},
		{"name", name},
		{"ready", c.ready},
		{"restartCount", c.restarts},
		{"started", c.terminated == nil},
		{"state", state},
	}
	if c.last != nil {
		out.Set("lastState", Object{{"terminated", c.last.object(c.last.ContainerID)}})
	}
	return out
}

func (t *Termination) object(containerID string) Object {
	return Object{{"containerID", containerID}, {"exitCode", t.ExitCode}, {"finishedAt", apiTime(t.FinishedAt)},
		{"reason", t.Reason}, {"startedAt", apiTime(t.StartedAt)}}
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// lastDashPart is what follows name's last dash: a ReplicaSet's hash.
func lastDashPart(name string) string { return name[strings.LastIndex(name, "-")+1:] }

// withoutLastDashPart is name up to its last dash: a pod's ReplicaSet.
func withoutLastDashPart(name string) string {
	if i := strings.LastIndex(name, "-"); i >= 0 {
		return name[:i]
	}
	return name
}
