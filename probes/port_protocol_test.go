package probes

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

func mysqlWorld(portName string, appProtocol *string, image string) portProtocolInput {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "mysql"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "mysql"},
		Ports:    []corev1.ServicePort{{Name: portName, Port: 3306, TargetPort: intstr.FromInt32(3306), AppProtocol: appProtocol}},
	}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "mysql-0", Labels: map[string]string{"app": "mysql"}}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "mysql", Image: image, Ports: []corev1.ContainerPort{{ContainerPort: 3306}}},
			{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.24.2"},
		},
	}}
	return portProtocolInput{Service: svc, Pods: []corev1.Pod{pod}}
}

// MySQL behind a port named http-mysql: istiod reads the name, not the
// well-known port, so the sidecars wait for HTTP bytes MySQL never sends.
// The caller's app says the handshake never came (MySQL client error 2013,
// the shape of istio/istio#10062 and #38284). The same port named
// "mysql", "tcp-mysql" or with appProtocol tcp, or unnamed (3306 is TCP to
// istiod), is no finding.
func TestPortProtocolServerFirst(t *testing.T) {
	target := cluster.Target{Namespace: "shop", Service: "mysql", Port: 3306, Source: &cluster.PodRef{Namespace: "shop", Name: "orders-1"}}
	in := mysqlWorld("http-mysql", nil, "docker.io/library/mysql:8.0.36")
	in.CallerLogs = map[string][]byte{"orders": []byte("2026-12-02T03:04:05Z INFO starting\n" +
		"2026-12-02T03:04:15Z ERROR db: Lost connection to MySQL server at 'reading initial communication packet', system error: 0\n" +
		"2026-12-02T03:04:25Z ERROR db: (2013, \"Lost connection to MySQL server at 'reading initial communication packet', system error: 0\")\n")}
	in.CallerLogsRead = true
	r := evaluatePortProtocol(target, in)
	want := []string{"3306 http-mysql: HTTP by name; container mysql runs docker.io/library/mysql:8.0.36 (MySQL); port 3306 is MySQL's"}
	if got := r.Facts["portproto_server_first"]; !reflect.DeepEqual(got, want) || r.Status != StatusFail {
		t.Errorf("server first %q status %s, want %q fail", got, r.Status, want)
	}
	if r.Facts["portproto_client_errors"] != 2 || !reflect.DeepEqual(r.Facts["portproto_server_first_ports"], []string{"3306"}) {
		t.Errorf("client errors %v ports %v", r.Facts["portproto_client_errors"], r.Facts["portproto_server_first_ports"])
	}

	tcp, empty := "tcp", ""
	for name, in := range map[string]portProtocolInput{
		"named mysql":        mysqlWorld("mysql", nil, "mysql:8.0"),
		"named tcp-mysql":    mysqlWorld("tcp-mysql", nil, "mysql:8.0"),
		"appProtocol tcp":    mysqlWorld("http-mysql", &tcp, "mysql:8.0"),
		"unnamed, port 3306": mysqlWorld("", nil, "mysql:8.0"),
		"empty appProtocol":  mysqlWorld("http", &empty, "mysql:8.0"),
		"http, not server-first": func() portProtocolInput {
			in := mysqlWorld("http", nil, "ghcr.io/shop/orders:2.4")
			in.Service.Spec.Ports[0].Port, in.Service.Spec.Ports[0].TargetPort = 8080, intstr.FromInt32(8080)
			in.Pods[0].Spec.Containers[0].Ports[0].ContainerPort = 8080
			return in
		}(),
	} {
		r := evaluatePortProtocol(cluster.Target{Namespace: "shop", Service: "mysql"}, in)
		if got := r.Facts["portproto_server_first"].([]string); len(got) != 0 {
			t.Errorf("%s: server first %q", name, got)
		}
	}
	// An unknown name on another port is sniffed: the image alone says it.
	in = mysqlWorld("db", nil, "bitnami/mariadb:11.4")
	in.Service.Spec.Ports[0].Port = 13306
	r = evaluatePortProtocol(cluster.Target{Namespace: "shop", Service: "mysql"}, in)
	if got := r.Facts["portproto_server_first"]; !reflect.DeepEqual(got, []string{"13306 db: sniffed by none; container mysql runs bitnami/mariadb:11.4 (MySQL); container port 3306 is MySQL's"}) {
		t.Errorf("sniffed mariadb: %q", got)
	}
}

func TestImageName(t *testing.T) {
	for ref, want := range map[string]string{
		"mysql":                       "mysql",
		"docker.io/library/mysql:8.0": "mysql",
		"registry:5000/team/MariaDB:11@sha256:ab": "mariadb",
		"bitnami/mongodb":                         "mongodb",
	} {
		if got := imageName(ref); got != want {
			t.Errorf("imageName(%q) = %q, want %q", ref, got, want)
		}
	}
}
