// Package istioversion reads the versions the probes compare: Kubernetes'
// and Istio's major.minor from the strings clusters print them in, an
// image's tag, istiod's discovery container, and the skew between
// istiod and a proxy. The versions probe judges native sidecars by them,
// the proxy-status probe the control plane/data plane skew.
package istioversion

import (
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// IstiodContainer is the name of istiod's container (the Helm chart's and
// istioctl's).
const IstiodContainer = "discovery"

var leadingVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// MajorMinor reads "v1.30.0-gke.1", "1.24.2-distroless", istiod's
// /version "1.24.2-5f8a1e3c-Clean" and the like.
func MajorMinor(v string) ([2]int, bool) {
	m := leadingVersion.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return [2]int{}, false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return [2]int{major, minor}, true
}

// AtLeast reports v >= min, by major then minor.
func AtLeast(v, min [2]int) bool {
	return v[0] > min[0] || v[0] == min[0] && v[1] >= min[1]
}

// ImageTag is the tag of an image reference, without any digest; "" when
// the reference has no tag.
func ImageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[colon+1:]
	}
	return ""
}

// IstiodImage is the image of pod's discovery container ("" when it has
// none).
func IstiodImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == IstiodContainer {
			return c.Image
		}
	}
	return ""
}

// MinorSkew is how many minor versions the control plane is ahead of the
// data plane (negative: the proxy is ahead); false when either version
// cannot be read or their majors differ.
func MinorSkew(controlPlane, dataPlane string) (int, bool) {
	cp, ok1 := MajorMinor(controlPlane)
	dp, ok2 := MajorMinor(dataPlane)
	if !ok1 || !ok2 || cp[0] != dp[0] {
		return 0, false
	}
	return cp[1] - dp[1], true
}
