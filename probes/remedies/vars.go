package remedies

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Var is a value a fix direction's text and commands use: known, or said
// in words with why it is not known.
type Var struct {
	Value string
	Words string
	Why   string
}

func known(v string) Var { return Var{Value: v} }

func unknown(words, why string) Var { return Var{Words: words, Why: why} }

// VarDocs are the ${NAME} values Vars fills, with what each is: what a
// runbook's fix texts, commands and verifications may name besides the
// target's.
var VarDocs = map[string]string{
	"PORT":                     "the target port, or the Service's only port when none was named",
	"SELECTOR":                 "the Service's selector as kubectl -l takes it",
	"SERVICE_WORKLOADS":        "the workloads of the Service's pods as kind/name, space-separated (kubectl rollout restart takes them all)",
	"SERVICE_DEPLOYMENT":       "the Deployment of the Service's pods as deployment/NAME, when one Deployment owns them all",
	"APP_CONTAINER":            "the app container of the Service's pods (not istio-proxy)",
	"NOT_READY_POD":            "a pod of the Service whose endpoint is not ready",
	"SOURCE_WORKLOAD":          "the caller's workload as kind/name",
	"SOURCE_PRINCIPAL":         "the caller's identity as ztunnel and AuthorizationPolicy see it (TRUST-DOMAIN/ns/NS/sa/SA)",
	"GATEWAY":                  "the Istio Gateway that selects the gateway pod, as namespace/name",
	"GATEWAY_NAME":             "that Gateway's name",
	"GATEWAY_NAMESPACE":        "that Gateway's namespace",
	"WAYPOINT":                 "the waypoint the Service's (or its namespace's) istio.io/use-waypoint names",
	"WAYPOINT_NAMESPACE":       "that waypoint's namespace",
	"NOT_ENROLLED_WORKLOAD":    "the workload of a pod meant for ambient that the CNI did not enroll, as kind/name",
	"NOT_ENROLLED_NAMESPACE":   "that pod's namespace",
	"EXTERNAL_HOST":            "an external host the caller sent to BlackHoleCluster",
	"ZTUNNEL_NODES":            "the nodes of the path without a Running, Ready ztunnel, space-separated",
	"ISTIO_NAMESPACE":          "istiod's namespace",
	"TLS_CREDENTIAL_SECRET":    "the certificate Secret a gateway's TLS server or listener names and istiod does not find",
	"TLS_CREDENTIAL_NAMESPACE": "the namespace istiod reads that Secret from (an Istio Gateway's credentialName: the gateway pod's)",
}

// VarNames are VarDocs' names, sorted.
func VarNames() []string { return sortedKeys(VarDocs) }

// Vars fills every name of VarDocs from the evidence: the facts and the
// objects the triage read (through the session's cache).
func Vars(ctx context.Context, in *Input) map[string]Var {
	out := map[string]Var{}
	t := in.Target
	out["ISTIO_NAMESPACE"] = known(in.Cluster.Info().ControlPlaneNamespace)
	if out["ISTIO_NAMESPACE"].Value == "" {
		out["ISTIO_NAMESPACE"] = known("istio-system")
	}
	_, sd, err := in.ServiceData(ctx)
	serviceWhy := "the Service could not be read"
	if err != nil {
		serviceWhy = err.Error()
	}
	if sd != nil {
		if t.Port == 0 && len(sd.Service.Spec.Ports) == 1 {
			out["PORT"] = known(fmt.Sprint(sd.Service.Spec.Ports[0].Port))
		}
		if sel := sd.Service.Spec.Selector; len(sel) > 0 {
			out["SELECTOR"] = known(selectorString(sel))
		} else {
			out["SELECTOR"] = unknown("the Service's pods", "the Service has no selector")
		}
	} else {
		out["SELECTOR"] = unknown("the Service's selector", serviceWhy)
	}
	pods, _ := in.Pods(ctx)
	podsWords := "the workload of the Service's pods"
	switch ws := workloadsOf(pods); {
	case len(pods) == 0:
		out["SERVICE_WORKLOADS"] = unknown(podsWords, "the Service selects no pod the triage read")
		out["SERVICE_DEPLOYMENT"] = unknown("the Deployment of the Service's pods", "the Service selects no pod the triage read")
	default:
		var refs []string
		var deployments []string
		for _, w := range ws {
			if w.restartable() {
				refs = append(refs, w.Ref())
			}
			if w.Kind == "Deployment" {
				deployments = append(deployments, w.Ref())
			}
		}
		if len(refs) == len(ws) {
			out["SERVICE_WORKLOADS"] = known(strings.Join(refs, " "))
		} else {
			out["SERVICE_WORKLOADS"] = unknown(podsWords, "some of its pods have no Deployment, StatefulSet or DaemonSet to restart ("+describeWorkloads(ws)+")")
		}
		if len(deployments) == 1 && len(ws) == 1 {
			out["SERVICE_DEPLOYMENT"] = known(deployments[0])
		} else {
			out["SERVICE_DEPLOYMENT"] = unknown("the Deployment of the Service's pods", "its pods belong to "+describeWorkloads(ws))
		}
	}
	if len(pods) > 0 {
		if c := appContainer(pods[0]); c != "" {
			out["APP_CONTAINER"] = known(c)
		}
	}
	if _, ok := out["APP_CONTAINER"]; !ok {
		out["APP_CONTAINER"] = unknown("the app container", "no pod of the Service was read")
	}
	out["NOT_READY_POD"] = notReadyPod(in.Facts, pods)
	sourceVars(ctx, in, out)
	gatewayVars(in.Facts, out)
	waypointVars(in.Facts, out)
	credentialVars(in.Facts, out)
	notEnrolledVars(ctx, in, out)
	out["EXTERNAL_HOST"] = firstOf(in.Facts, "an external host", "the triage saw no request to an unregistered external host",
		"se_unregistered_hosts", "se_hidden_hosts", "log_blackhole_hosts")
	if nodes, ok := in.Facts["ztunnel_nodes_without"].([]string); ok && len(nodes) > 0 {
		out["ZTUNNEL_NODES"] = known(strings.Join(nodes, " "))
	} else {
		out["ZTUNNEL_NODES"] = unknown("the nodes without ztunnel", "the ztunnel step names none")
	}
	return out
}

func describeWorkloads(ws []workload) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, w.String())
	}
	return strings.Join(parts, ", ")
}

// notReadyPod is the first pod the endpoints step lists as not ready
// ("NAME: reason"), else a Service pod whose Ready condition is false.
func notReadyPod(facts probes.Facts, pods []*corev1.Pod) Var {
	if list, ok := facts["endpoints_not_ready_pods"].([]string); ok {
		for _, e := range list {
			name, _, _ := strings.Cut(e, ":")
			if name = strings.TrimSpace(name); name != "" && !strings.Contains(name, ".") {
				return known(name)
			}
		}
	}
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				return known(p.Name)
			}
		}
	}
	return unknown("a pod that is not ready", "the endpoints step names no pod that is not ready")
}

func sourceVars(ctx context.Context, in *Input, out map[string]Var) {
	t := in.Target
	if t.Source == nil {
		why := "no caller was named (--from)"
		out["SOURCE_WORKLOAD"] = unknown("the caller's workload", why)
		out["SOURCE_PRINCIPAL"] = unknown("the caller's identity", why)
		return
	}
	pod, err := in.Cluster.GetPod(ctx, t.Source.Namespace, t.Source.Name)
	if err != nil {
		why := "the caller pod could not be read: " + err.Error()
		out["SOURCE_WORKLOAD"] = unknown("the caller's workload", why)
		out["SOURCE_PRINCIPAL"] = unknown("the caller's identity", why)
		return
	}
	if w := workloadOf(pod); w.Kind != "Pod" {
		out["SOURCE_WORKLOAD"] = known(w.Ref())
	} else {
		out["SOURCE_WORKLOAD"] = unknown("the caller's workload", "pod "+pod.Name+" has no controller")
	}
	td := "cluster.local"
	if cfg, _, _, err := in.Model(ctx); err == nil && cfg != nil {
		td = cfg.Mesh.TrustDomain()
	}
	out["SOURCE_PRINCIPAL"] = known(mesh.SPIFFEPrincipal(td, pod.Namespace, pod.Spec.ServiceAccountName))
}

func gatewayVars(facts probes.Facts, out map[string]Var) {
	list, _ := facts["gateway_selecting"].([]string)
	if len(list) == 0 {
		why := "no Istio Gateway selects the gateway pod"
		if _, ok := facts["gateway_selecting"]; !ok {
			why = "the caller is no gateway, or its Gateways were not read"
		}
		for _, n := range []string{"GATEWAY", "GATEWAY_NAME", "GATEWAY_NAMESPACE"} {
			out[n] = unknown("the Gateway that selects the gateway pod", why)
		}
		return
	}
	ns, name, _ := splitRef(list[0])
	out["GATEWAY"], out["GATEWAY_NAME"], out["GATEWAY_NAMESPACE"] = known(list[0]), known(name), known(ns)
}

func waypointVars(facts probes.Facts, out map[string]Var) {
	ref, _ := facts["waypoint_name"].(string)
	ns, name, ok := splitRef(ref)
	if !ok {
		out["WAYPOINT"] = unknown("the waypoint", "the Service and its namespace name no waypoint")
		out["WAYPOINT_NAMESPACE"] = unknown("the waypoint's namespace", "the Service and its namespace name no waypoint")
		return
	}
	out["WAYPOINT"], out["WAYPOINT_NAMESPACE"] = known(name), known(ns)
}

// credentialVars: the gateway step lists the missing credentials' Secrets
// as namespace/name, where istiod reads them; the first speaks.
func credentialVars(facts probes.Facts, out map[string]Var) {
	secrets, _ := facts["gateway_tls_credential_secrets"].([]string)
	if len(secrets) > 0 {
		if ns, name, ok := splitRef(secrets[0]); ok {
			out["TLS_CREDENTIAL_SECRET"], out["TLS_CREDENTIAL_NAMESPACE"] = known(name), known(ns)
			return
		}
	}
	why := "the gateway step names no missing TLS credential's Secret"
	out["TLS_CREDENTIAL_SECRET"] = unknown("the certificate Secret the server names", why)
	out["TLS_CREDENTIAL_NAMESPACE"] = unknown("the namespace istiod reads it from", why)
}

// notEnrolledVars: the dataplane step lists "NS/NAME[ (caller)]: why".
func notEnrolledVars(ctx context.Context, in *Input, out map[string]Var) {
	words := "the workload of the pod the CNI did not enroll"
	list, _ := in.Facts["dataplane_not_enrolled_pods"].([]string)
	for _, e := range list {
		ref, _, _ := strings.Cut(e, ":")
		ref = strings.TrimSuffix(strings.TrimSpace(ref), " (caller)")
		ns, name, ok := splitRef(ref)
		if !ok {
			continue
		}
		out["NOT_ENROLLED_NAMESPACE"] = known(ns)
		pod, err := in.Cluster.GetPod(ctx, ns, name)
		if err != nil {
			out["NOT_ENROLLED_WORKLOAD"] = unknown(words, "pod "+ref+" could not be read: "+err.Error())
			return
		}
		if w := workloadOf(pod); w.restartable() {
			out["NOT_ENROLLED_WORKLOAD"] = known(w.Ref())
		} else {
			out["NOT_ENROLLED_WORKLOAD"] = unknown(words, "pod "+ref+" is owned by "+w.String()+", which kubectl rollout restart does not take: delete the pod once the CNI is healthy")
		}
		return
	}
	out["NOT_ENROLLED_WORKLOAD"] = unknown(words, "the dataplane step names no pod that is not enrolled")
	out["NOT_ENROLLED_NAMESPACE"] = unknown("its namespace", "the dataplane step names no pod that is not enrolled")
}

func firstOf(facts probes.Facts, words, why string, names ...string) Var {
	for _, n := range names {
		if list, ok := facts[n].([]string); ok && len(list) > 0 {
			return known(list[0])
		}
	}
	return unknown(words, why)
}
