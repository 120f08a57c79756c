package mesh

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// WorkloadName is the name Istio's telemetry gives a pod's workload
// (source_workload, destination_workload): pilot-agent's ISTIO_META_WORKLOAD_NAME,
// which the injector derives from the pod's controller the way
// kube.GetDeployMetaFromPod does. A generated pod owned by a ReplicaSet
// whose name ends in the pod-template-hash belongs to the Deployment; a
// Job named NAME-<timestamp> to the CronJob NAME; any other controller
// names the workload itself; a pod without a generated name or controller
// is its own workload.
func WorkloadName(pod *corev1.Pod) string {
	if pod.GenerateName == "" {
		return pod.Name
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		switch hash := pod.Labels["pod-template-hash"]; {
		case ref.Kind == "ReplicaSet" && hash != "" && strings.HasSuffix(ref.Name, hash):
			return strings.TrimSuffix(ref.Name, "-"+hash)
		case ref.Kind == "ReplicaSet" && pod.Labels["rollouts-pod-template-hash"] != "" && strings.HasSuffix(ref.Name, pod.Labels["rollouts-pod-template-hash"]):
			return strings.TrimSuffix(ref.Name, "-"+pod.Labels["rollouts-pod-template-hash"])
		case ref.Kind == "ReplicationController" && pod.Labels["deploymentconfig"] != "":
			return pod.Labels["deploymentconfig"]
		case ref.Kind == "Job":
			if m := cronJobRun.FindStringSubmatch(ref.Name); m != nil {
				return m[1]
			}
		}
		return ref.Name
	}
	return pod.Name
}

// cronJobRun is a Job a CronJob made: its name, a dash and the scheduled
// time in minutes since the epoch.
var cronJobRun = regexp.MustCompile(`^(.+)-\d{8,10}$`)

// EndpointWorkloadName is the workload name istiod's endpoint builder gives
// a pod's endpoints (GetWorkloadMetaFromPod, which EDS sends in the
// endpoint's istio metadata for telemetry): the
// service.istio.io/workload-name label, else WorkloadName.
func EndpointWorkloadName(pod *corev1.Pod) string {
	if name, ok := pod.Labels["service.istio.io/workload-name"]; ok {
		return name
	}
	return WorkloadName(pod)
}

// CanonicalService is a workload's canonical service name and revision as
// Istio derives them (pkg/kube/labels CanonicalService): the
// service.istio.io/canonical-name label, else app.kubernetes.io/name, else
// app, else the workload name; the canonical-revision label, else
// app.kubernetes.io/version, else version, else "latest". A label present
// with an empty value is taken as it is.
func CanonicalService(labels map[string]string, workload string) (name, revision string) {
	name, revision = workload, "latest"
	for _, k := range []string{"service.istio.io/canonical-name", "app.kubernetes.io/name", "app"} {
		if v, ok := labels[k]; ok {
			name = v
			break
		}
	}
	for _, k := range []string{"service.istio.io/canonical-revision", "app.kubernetes.io/version", "version"} {
		if v, ok := labels[k]; ok {
			revision = v
			break
		}
	}
	return name, revision
}
