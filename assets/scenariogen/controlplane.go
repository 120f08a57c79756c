package main

import (
	"strings"
	"time"
)

// ControlPlane adds istio-system: its namespace, the mesh ConfigMap
// (meshConfig is the "mesh" key's YAML), istiod's Service and its pod.
// nativeSidecars turns on ENABLE_NATIVE_SIDECARS in istiod's env.
func (w *World) ControlPlane(created time.Time, meshConfig string, nativeSidecars bool) {
	w.Namespace("istio-system", created, "")
	w.add("istio-system.yaml", Object{
		{"apiVersion", "v1"}, {"kind", "ConfigMap"},
		{"metadata", w.meta("ConfigMap", "istio-system", "istio", created, ObjectMeta{
			Labels: Object{
				{"app.kubernetes.io/instance", "istiod"}, {"app.kubernetes.io/managed-by", "Helm"}, {"app.kubernetes.io/name", "istiod"},
				{"app.kubernetes.io/part-of", "istio"}, {"app.kubernetes.io/version", istioVersion}, {"helm.sh/chart", "istiod-" + istioVersion},
				{"install.operator.istio.io/owning-resource", "unknown"}, {"istio.io/rev", "default"}, {"operator.istio.io/component", "Pilot"},
				{"release", "istiod"},
			},
			Annotations: Object{{"meta.helm.sh/release-name", "istiod"}, {"meta.helm.sh/release-namespace", "istio-system"}},
		})},
		{"data", Object{{"mesh", strings.TrimSpace(meshConfig) + "\n"}, {"meshNetworks", "networks: {}"}}},
	})
	w.Service(ServiceSpec{
		Namespace: "istio-system", Name: "istiod", ClusterIP: "10.96.0.15",
		Selector: Object{{"app", "istiod"}, {"istio", "pilot"}},
		Created:  created,
		Ports: []ServicePort{
			{"grpc-xds", 15010, 15010}, {"https-dns", 15012, 15012}, {"https-webhook", 443, 15017}, {"http-monitoring", 15014, 15014},
		},
		File:   "istio-system.yaml",
		Labels: Object{{"app", "istiod"}, {"istio", "pilot"}, {"istio.io/rev", "default"}, {"release", "istiod"}},
	})
	env := []Object{
		{{"name", "REVISION"}, {"value", "default"}},
		{{"name", "PILOT_CERT_PROVIDER"}, {"value", "istiod"}},
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("SERVICE_ACCOUNT", "spec.serviceAccountName"),
		{{"name", "KUBECONFIG"}, {"value", "/var/run/secrets/remote/config"}},
		{{"name", "CA_TRUSTED_NODE_ACCOUNTS"}, {"value", "istio-system/ztunnel"}},
		{{"name", "PILOT_TRACE_SAMPLING"}, {"value", "1"}},
		{{"name", "PILOT_ENABLE_ANALYSIS"}, {"value", "false"}},
		{{"name", "CLUSTER_ID"}, {"value", "Kubernetes"}},
		resourceEnv("GOMEMLIMIT", "limits.memory"),
		resourceEnv("GOMAXPROCS", "limits.cpu"),
		{{"name", "PLATFORM"}},
	}
	if nativeSidecars {
		env = append(env, Object{{"name", "ENABLE_NATIVE_SIDECARS"}, {"value", "true"}})
	}
	const name, nodeName = "istiod-7c9f8b6d5c-mx4qp", "worker-a"
	ip := podIP(nodeName, 5)
	started := created.Add(9 * time.Second)
	w.add("istio-system.yaml", Object{
		{"apiVersion", "v1"}, {"kind", "Pod"},
		{"metadata", w.meta("Pod", "istio-system", name, created, ObjectMeta{
			Labels: Object{
				{"app", "istiod"}, {"install.operator.istio.io/owning-resource", "unknown"}, {"istio", "pilot"}, {"istio.io/dataplane-mode", "none"},
				{"istio.io/rev", "default"}, {"operator.istio.io/component", "Pilot"}, {"pod-template-hash", "7c9f8b6d5c"}, {"sidecar.istio.io/inject", "false"},
			},
			Annotations: Object{{"prometheus.io/port", "15014"}, {"prometheus.io/scrape", "true"}, {"sidecar.istio.io/inject", "false"}},
			Owner:       w.rsOwner("istio-system", "istiod-7c9f8b6d5c"),
		})},
		{"spec", Object{
			{"containers", []Object{{
				{"args", []string{"discovery", "--monitoringAddr=:15014", "--log_output_level=default:info", "--domain", meshDomain, "--keepaliveMaxServerConnectionAge", "30m"}},
				{"env", env},
				{"image", pilotImage}, {"imagePullPolicy", "IfNotPresent"}, {"name", "discovery"},
				{"ports", []Object{
					{{"containerPort", 8080}, {"name", "http-debug"}, {"protocol", "TCP"}},
					{{"containerPort", 15010}, {"name", "grpc-xds"}, {"protocol", "TCP"}},
					{{"containerPort", 15017}, {"name", "https-webhooks"}, {"protocol", "TCP"}},
				}},
				{"readinessProbe", Object{{"failureThreshold", 3}, {"httpGet", Object{{"path", "/ready"}, {"port", 8080}, {"scheme", "HTTP"}}},
					{"initialDelaySeconds", 1}, {"periodSeconds", 3}, {"successThreshold", 1}, {"timeoutSeconds", 5}}},
				{"resources", Object{{"requests", Object{{"cpu", "500m"}, {"memory", "2Gi"}}}}},
				{"securityContext", Object{{"allowPrivilegeEscalation", false}, {"capabilities", Object{{"drop", []string{"ALL"}}}},
					{"readOnlyRootFilesystem", true}, {"runAsNonRoot", true}}},
				{"terminationMessagePath", "/dev/termination-log"}, {"terminationMessagePolicy", "File"},
				{"volumeMounts", []Object{
					{{"mountPath", "/var/run/secrets/tokens"}, {"name", "istio-token"}, {"readOnly", true}},
					{{"mountPath", "/var/run/secrets/istio-dns"}, {"name", "local-certs"}},
					{{"mountPath", "/etc/cacerts"}, {"name", "cacerts"}, {"readOnly", true}},
					{{"mountPath", "/var/run/secrets/remote"}, {"name", "istio-kubeconfig"}, {"readOnly", true}},
					{{"mountPath", "/var/run/secrets/istiod/tls"}, {"name", "istio-csr-dns-cert"}, {"readOnly", true}},
					{{"mountPath", "/var/run/secrets/istiod/ca"}, {"name", "istio-csr-ca-configmap"}, {"readOnly", true}},
				}},
			}}},
			{"dnsPolicy", "ClusterFirst"}, {"enableServiceLinks", true}, {"nodeName", nodeName}, {"preemptionPolicy", "PreemptLowerPriority"}, {"priority", 0},
			{"restartPolicy", "Always"}, {"schedulerName", "default-scheduler"}, {"securityContext", Object{}},
			{"serviceAccount", "istiod"}, {"serviceAccountName", "istiod"},
			{"terminationGracePeriodSeconds", 30},
			{"tolerations", append([]Object{{{"key", "cni.istio.io/not-ready"}, {"operator", "Exists"}}}, defaultTolerations()...)},
			{"volumes", []Object{
				{{"emptyDir", Object{{"medium", "Memory"}}}, {"name", "local-certs"}},
				{{"name", "istio-token"}, {"projected", istioTokenProjection()}},
				{{"name", "cacerts"}, {"secret", Object{{"defaultMode", 420}, {"optional", true}, {"secretName", "cacerts"}}}},
				{{"name", "istio-kubeconfig"}, {"secret", Object{{"defaultMode", 420}, {"optional", true}, {"secretName", "istio-kubeconfig"}}}},
				{{"name", "istio-csr-dns-cert"}, {"secret", Object{{"defaultMode", 420}, {"optional", true}, {"secretName", "istiod-tls"}}}},
				{{"configMap", Object{{"defaultMode", 420}, {"name", "istio-ca-root-cert"}, {"optional", true}}}, {"name", "istio-csr-ca-configmap"}},
			}},
		}},
		{"status", Object{
			{"conditions", podConditions(created, created.Add(8*time.Second), started.Add(3*time.Second), true, "")},
			{"containerStatuses", []Object{w.containerStatus("istio-system", name, "discovery", pilotImage, started, containerState{ready: true})}},
			{"hostIP", nodeOf(nodeName).ip}, {"hostIPs", []Object{{{"ip", nodeOf(nodeName).ip}}}},
			{"phase", "Running"}, {"podIP", ip}, {"podIPs", []Object{{{"ip", ip}}}},
			{"qosClass", "Burstable"}, {"startTime", apiTime(created.Add(time.Second))},
		}},
	})
}

func fieldEnv(name, fieldPath string) Object {
	return Object{{"name", name}, {"valueFrom", Object{{"fieldRef", Object{{"apiVersion", "v1"}, {"fieldPath", fieldPath}}}}}}
}

func resourceEnv(name, resource string) Object {
	return Object{{"name", name}, {"valueFrom", Object{{"resourceFieldRef", Object{{"divisor", "0"}, {"resource", resource}}}}}}
}

func istioTokenProjection() Object {
	return Object{{"defaultMode", 420}, {"sources", []Object{{{"serviceAccountToken", Object{
		{"audience", "istio-ca"}, {"expirationSeconds", 43200}, {"path", "istio-token"}}}}}}}
}

func defaultTolerations() []Object {
	return []Object{
		{{"effect", "NoExecute"}, {"key", "node.kubernetes.io/not-ready"}, {"operator", "Exists"}, {"tolerationSeconds", 300}},
		{{"effect", "NoExecute"}, {"key", "node.kubernetes.io/unreachable"}, {"operator", "Exists"}, {"tolerationSeconds", 300}},
	}
}
