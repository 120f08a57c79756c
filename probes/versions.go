package probes

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/wording"
	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
)

// VersionsProbe reads the Kubernetes server version and the istiod version,
// which decide what fixes are available (native sidecars need 1.29+).
type VersionsProbe struct{}

func (VersionsProbe) Meta() Meta {
	return Meta{
		ID:    "versions",
		Title: "Kubernetes and Istio versions",
		Reads: []string{"version", "pods (istiod)"},
		Facts: []FactSpec{
			{"versions_kubernetes", FactString, "Kubernetes server version"},
			{"versions_native_sidecar_supported", FactBool, "Kubernetes is 1.29 or newer"},
			{"versions_istiod", FactString, "istiod image tag (empty when no istiod pod is found)"},
			{"versions_native_sidecar_mode", FactString, "istiod's ENABLE_NATIVE_SIDECARS as in effect: true, false or auto (Istio 1.27+ default), empty when no istiod pod is found"},
			{"versions_native_sidecars_enabled", FactBool, "istiod injects native sidecars: ENABLE_NATIVE_SIDECARS=true, or auto with Kubernetes 1.33+"},
		},
	}
}

// Minimum versions behind the native sidecar facts: the SidecarContainers
// feature is on by default from Kubernetes 1.29 (beta) and stable in 1.33,
// which is what istiod's "auto" mode checks; "auto" is the default from
// Istio 1.27.
var (
	nativeSidecarKube      = [2]int{1, 29}
	nativeSidecarAutoKube  = [2]int{1, 33}
	nativeSidecarAutoIstio = [2]int{1, 27}
)

const (
	istiodAppLabel      = "istiod"
	istiodContainer     = "discovery"
	nativeSidecarEnvVar = "ENABLE_NATIVE_SIDECARS"
)

type versionsInput struct {
	Kubernetes    string
	ControlPlane  string
	Istiods       []corev1.Pod
	IstiodProblem string // set when istiod pods could not be listed
}

func (p VersionsProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchVersions(ctx, c)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = versionsCommands(istioconfig.ControlPlane(c))
		return r
	}
	return evaluateVersions(in)
}

func fetchVersions(ctx context.Context, c cluster.Cluster) (versionsInput, string, error) {
	in := versionsInput{ControlPlane: istioconfig.ControlPlane(c)}
	var err error
	if in.Kubernetes, err = c.ServerVersion(ctx); err != nil {
		return in, "read the Kubernetes server version", err
	}
	pods, err := c.ListPods(ctx, in.ControlPlane, map[string]string{"app": istiodAppLabel})
	if err != nil {
		// The Kubernetes version still decides what can be fixed.
		in.IstiodProblem = cluster.AccessProblem("list istiod pods in "+in.ControlPlane, err)
		return in, "", nil
	}
	in.Istiods = pods
	return in, "", nil
}

var leadingVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// majorMinor reads "v1.30.0-gke.1", "1.24.2-distroless" and the like.
func majorMinor(v string) ([2]int, bool) {
	m := leadingVersion.FindStringSubmatch(v)
	if m == nil {
		return [2]int{}, false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return [2]int{major, minor}, true
}

func atLeast(v, min [2]int) bool {
	return v[0] > min[0] || v[0] == min[0] && v[1] >= min[1]
}

// imageTag is the tag of an image reference, without any digest; "" when
// the reference has no tag.
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[colon+1:]
	}
	return ""
}

// istiodNativeMode is the pod's ENABLE_NATIVE_SIDECARS as istiod reads it:
// unset means "auto" from Istio 1.27 and false before.
func istiodNativeMode(pod *corev1.Pod, tag string) (mode, why string) {
	for _, c := range pod.Spec.Containers {
		if c.Name != istiodContainer {
			continue
		}
		for _, e := range c.Env {
			if e.Name != nativeSidecarEnvVar {
				continue
			}
			if e.ValueFrom != nil {
				return "", nativeSidecarEnvVar + " comes from a reference this probe does not resolve"
			}
			switch v := strings.ToLower(strings.TrimSpace(e.Value)); v {
			case "true", "false", "auto":
				return v, nativeSidecarEnvVar + "=" + e.Value
			default:
				// istiod warns and treats unknown values as false.
				return "false", fmt.Sprintf("%s=%q is not true/false/auto: istiod treats it as false", nativeSidecarEnvVar, e.Value)
			}
		}
	}
	v, ok := majorMinor(tag)
	switch {
	case !ok:
		return "", nativeSidecarEnvVar + " unset and the istiod version is unknown"
	case atLeast(v, nativeSidecarAutoIstio):
		return "auto", nativeSidecarEnvVar + " unset: auto, the default since Istio 1.27"
	}
	return "false", nativeSidecarEnvVar + " unset: false, the default before Istio 1.27"
}

func evaluateVersions(in versionsInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: versionsCommands(in.ControlPlane)}
	var raw, warnings []string
	kube, kubeOK := majorMinor(in.Kubernetes)
	if !kubeOK {
		raw = append(raw, fmt.Sprintf("cannot read a version number from %q", in.Kubernetes))
		warnings = append(warnings, fmt.Sprintf("Kubernetes version %q not understood", in.Kubernetes))
	}
	supported := kubeOK && atLeast(kube, nativeSidecarKube)
	r.Facts["versions_kubernetes"] = in.Kubernetes
	r.Facts["versions_native_sidecar_supported"] = supported
	raw = append(raw, fmt.Sprintf("Kubernetes %s: native sidecars %s", in.Kubernetes, map[bool]string{true: "supported (1.29+)", false: "not supported (needs 1.29+)"}[supported]))

	head := "Kubernetes " + in.Kubernetes
	if in.IstiodProblem != "" {
		warnings = append(warnings, in.IstiodProblem)
		raw = append(raw, in.IstiodProblem+": istiod version unknown")
		r.Status, r.Summary = verdict{Head: head, Warnings: warnings}.judge()
		r.Evidence.Raw = strings.Join(raw, "\n")
		return r
	}

	pods := append([]corev1.Pod(nil), in.Istiods...)
	// Prefer running pods, then by name, so a crash-looping canary does not
	// speak for the control plane.
	sort.SliceStable(pods, func(i, j int) bool {
		ri, rj := pods[i].Status.Phase == corev1.PodRunning, pods[j].Status.Phase == corev1.PodRunning
		if ri != rj {
			return ri
		}
		return pods[i].Name < pods[j].Name
	})
	r.Evidence.Columns = []string{"pod", "revision", "image", "phase", "native sidecars"}
	var tags []string
	var version, mode, modeWhy string
	for i := range pods {
		pod := &pods[i]
		image := ""
		for _, c := range pod.Spec.Containers {
			if c.Name == istiodContainer {
				image = c.Image
			}
		}
		tag := imageTag(image)
		m, why := istiodNativeMode(pod, tag)
		if i == 0 {
			version, mode, modeWhy = tag, m, why
		}
		tags = append(tags, tag)
		rev := pod.Labels[label.IoIstioRev.Name]
		r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Name, wording.Dash(rev), wording.Dash(image), string(pod.Status.Phase), why})
	}

	enabled := false
	switch mode {
	case "true":
		enabled = true
	case "auto":
		// istiod's auto mode checks every node's kubelet, which this probe
		// does not read (no cluster-wide reads): the server version stands
		// in, and a node left on an older kubelet turns it off.
		enabled = kubeOK && atLeast(kube, nativeSidecarAutoKube)
		raw = append(raw, fmt.Sprintf("auto: istiod injects native sidecars only when every node's kubelet is 1.33+; judged from the server version %s", in.Kubernetes))
	}
	r.Facts["versions_istiod"] = version
	r.Facts["versions_native_sidecar_mode"] = mode
	r.Facts["versions_native_sidecars_enabled"] = enabled

	switch {
	case len(pods) == 0:
		warnings = append(warnings, fmt.Sprintf("no istiod pod (app=%s) in %s", istiodAppLabel, in.ControlPlane))
	default:
		head += "; istiod " + wording.Dash(version) + ", native sidecars " + map[bool]string{true: "on", false: "off"}[enabled]
		raw = append(raw, "istiod "+pods[0].Name+": "+modeWhy)
		if distinct := wording.UniqueNonEmpty(tags...); len(distinct) > 1 {
			raw = append(raw, "istiod pods run different versions: "+strings.Join(distinct, ", ")+" (revisions or a rollout in progress)")
		}
		if version == "" {
			warnings = append(warnings, "istiod image has no tag: version unknown")
		}
	}
	if enabled && !supported {
		warnings = append(warnings, "istiod injects native sidecars but Kubernetes is older than 1.29")
	}
	r.Evidence.Raw = strings.Join(raw, "\n")
	r.Status, r.Summary = verdict{Head: head, Warnings: warnings}.judge()
	return r
}

func versionsCommands(controlPlaneNS string) []string {
	return []string{
		"kubectl version",
		fmt.Sprintf("kubectl get pods -n %s -l app=%s -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.containers[?(@.name==\"%s\")].image}{\"\\n\"}{end}'", controlPlaneNS, istiodAppLabel, istiodContainer),
		fmt.Sprintf("kubectl get deployment -n %s -l app=%s -o jsonpath='{..env[?(@.name==\"%s\")]}'", controlPlaneNS, istiodAppLabel, nativeSidecarEnvVar),
		"istioctl version",
	}
}
