package mesh

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func istiodWithEnv(name string, env ...corev1.EnvVar) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system", Labels: map[string]string{"app": "istiod"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Env: env}}}}
}

func env(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func TestAmbientMultiNetworkOf(t *testing.T) {
	ambientOn := env(EnvEnableAmbient, "true")
	multiOn := env(EnvAmbientEnableMultiNetwork, "true")
	fromConfigMap := corev1.EnvVar{Name: EnvAmbientEnableMultiNetwork, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}
	for _, tc := range []struct {
		name    string
		pods    []corev1.Pod
		on      bool
		unknown string // a part of Unknown; "" when known
	}{
		{"both set", []corev1.Pod{istiodWithEnv("istiod-a", ambientOn, multiOn)}, true, ""},
		{"1 is true to ParseBool", []corev1.Pod{istiodWithEnv("istiod-a", env(EnvEnableAmbient, "1"), env(EnvAmbientEnableMultiNetwork, "T"))}, true, ""},
		// The chart's default: off.
		{"multi-network unset", []corev1.Pod{istiodWithEnv("istiod-a", ambientOn)}, false, ""},
		// registerAmbient ignores it without PILOT_ENABLE_AMBIENT.
		{"ambient off", []corev1.Pod{istiodWithEnv("istiod-a", multiOn)}, false, ""},
		{"not a boolean is the default", []corev1.Pod{istiodWithEnv("istiod-a", ambientOn, env(EnvAmbientEnableMultiNetwork, "yes"))}, false, ""},
		// The kubelet takes the last of a name given twice.
		{"last of two wins", []corev1.Pod{istiodWithEnv("istiod-a", ambientOn, multiOn, env(EnvAmbientEnableMultiNetwork, "false"))}, false, ""},
		{"no istiod", nil, false, "no running istiod"},
		{"value from a ConfigMap", []corev1.Pod{istiodWithEnv("istiod-a", ambientOn, fromConfigMap)}, false, "reference"},
		{"envFrom may hold it", []corev1.Pod{func() corev1.Pod {
			p := istiodWithEnv("istiod-a", ambientOn)
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}
			return p
		}()}, false, "envFrom"},
		{"replicas disagree", []corev1.Pod{istiodWithEnv("istiod-a", ambientOn, multiOn), istiodWithEnv("istiod-b", ambientOn)}, false, "disagree"},
		{"no discovery container", []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "istiod-a"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "other"}}}}}, false, "no discovery container"},
	} {
		got := AmbientMultiNetworkOf(tc.pods)
		if tc.unknown != "" {
			if !strings.Contains(got.Unknown, tc.unknown) {
				t.Errorf("%s: %+v, want unknown with %q", tc.name, got, tc.unknown)
			}
			continue
		}
		if got.Unknown != "" || got.On != tc.on || !strings.Contains(got.Why, "istiod-a: "+EnvAmbientEnableMultiNetwork) {
			t.Errorf("%s: %+v, want on=%v", tc.name, got, tc.on)
		}
	}
}
