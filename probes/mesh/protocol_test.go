package mesh

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// istiod's own table (pilot/pkg/serviceregistry/kube conversion_test.go
// TestConvertProtocol), every name in lower and upper case, and the
// Kubernetes appProtocol names ConvertProtocol reads first.
func TestReadPortProtocolIsIstiodsConvertProtocol(t *testing.T) {
	http, empty := "http", ""
	h2c, ws, wss, grpcWeb := "kubernetes.io/h2c", "kubernetes.io/ws", "kubernetes.io/wss", "grpc-web"
	type protocolCase struct {
		port        int32
		name        string
		appProtocol *string
		proto       corev1.Protocol
		out         string
	}
	protocols := []protocolCase{
		{8888, "", nil, corev1.ProtocolTCP, ProtocolSniffed},
		{25, "", nil, corev1.ProtocolTCP, "TCP"},
		{53, "", nil, corev1.ProtocolTCP, "TCP"},
		{3306, "", nil, corev1.ProtocolTCP, "TCP"},
		{27017, "", nil, corev1.ProtocolTCP, "TCP"},
		{8888, "http", nil, corev1.ProtocolTCP, "HTTP"},
		{8888, "http-test", nil, corev1.ProtocolTCP, "HTTP"},
		{8888, "http", nil, corev1.ProtocolUDP, "UDP"},
		{8888, "httptest", nil, corev1.ProtocolTCP, ProtocolSniffed},
		{25, "httptest", nil, corev1.ProtocolTCP, "TCP"},
		{53, "httptest", nil, corev1.ProtocolTCP, "TCP"},
		{3306, "httptest", nil, corev1.ProtocolTCP, "TCP"},
		{27017, "httptest", nil, corev1.ProtocolTCP, "TCP"},
		{8888, "https", nil, corev1.ProtocolTCP, "HTTPS"},
		{8888, "https-test", nil, corev1.ProtocolTCP, "HTTPS"},
		{8888, "http2", nil, corev1.ProtocolTCP, "HTTP2"},
		{8888, "http2-test", nil, corev1.ProtocolTCP, "HTTP2"},
		{8888, "grpc", nil, corev1.ProtocolTCP, "GRPC"},
		{8888, "grpc-test", nil, corev1.ProtocolTCP, "GRPC"},
		{8888, "grpc-web", nil, corev1.ProtocolTCP, "GRPC-Web"},
		{8888, "grpc-web-test", nil, corev1.ProtocolTCP, "GRPC-Web"},
		{8888, "mongo", nil, corev1.ProtocolTCP, "Mongo"},
		{8888, "mongo-test", nil, corev1.ProtocolTCP, "Mongo"},
		{8888, "redis", nil, corev1.ProtocolTCP, "Redis"},
		{8888, "redis-test", nil, corev1.ProtocolTCP, "Redis"},
		{8888, "mysql", nil, corev1.ProtocolTCP, "MySQL"},
		{8888, "mysql-test", nil, corev1.ProtocolTCP, "MySQL"},
		{8888, "tcp", &http, corev1.ProtocolTCP, "HTTP"},
		// appProtocol set, even empty, replaces the name.
		{3306, "http", &empty, corev1.ProtocolTCP, "TCP"},
		{8888, "http", &empty, corev1.ProtocolTCP, ProtocolSniffed},
		{8888, "tcp", &h2c, corev1.ProtocolTCP, "HTTP2"},
		{8888, "tcp", &ws, corev1.ProtocolTCP, "HTTP"},
		{8888, "http", &wss, corev1.ProtocolTCP, "HTTPS"},
		{8888, "tcp", &grpcWeb, corev1.ProtocolTCP, "GRPC-Web"},
		{3306, "http-mysql", nil, corev1.ProtocolTCP, "HTTP"},
	}
	var cases []protocolCase
	for _, p := range protocols {
		name := p.name
		p.name = strings.ToLower(name)
		cases = append(cases, p)
		if name != "" {
			p.name = strings.ToUpper(name)
			cases = append(cases, p)
		}
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(fmt.Sprintf("%s_%s_%d", c.name, c.proto, c.port), "-", "_"), func(t *testing.T) {
			sp := corev1.ServicePort{Port: c.port, Name: c.name, Protocol: c.proto, AppProtocol: c.appProtocol}
			if got := ReadPortProtocol(sp).Protocol; got != c.out {
				t.Fatalf("ReadPortProtocol(%d, %q, %q, %v) = %q, want %q", c.port, c.name, c.proto, c.appProtocol, got, c.out)
			}
		})
	}
}

func TestReadPortProtocolSaysWhatNamedIt(t *testing.T) {
	app := "tcp"
	for _, c := range []struct {
		sp   corev1.ServicePort
		want string
	}{
		{corev1.ServicePort{Port: 8080, Name: "http-web"}, DeclaredByName},
		{corev1.ServicePort{Port: 8080, Name: "http-web", AppProtocol: &app}, DeclaredByAppProtocol},
		{corev1.ServicePort{Port: 3306, Name: "db"}, DeclaredByPortNumber},
		{corev1.ServicePort{Port: 8080, Name: "web"}, DeclaredByNone},
		{corev1.ServicePort{Port: 8125, Name: "http", Protocol: corev1.ProtocolUDP}, DeclaredByKubernetes},
	} {
		if got := ReadPortProtocol(c.sp).DeclaredBy; got != c.want {
			t.Errorf("%+v declared by %q, want %q", c.sp, got, c.want)
		}
	}
}

func TestPortProtocolRoutes(t *testing.T) {
	for name, want := range map[string]string{"http": ProtocolHTTP, "web": ProtocolHTTP, "grpc-web": ProtocolHTTP, "mysql": ProtocolTCP,
		"redis": ProtocolTCP, "mongo": ProtocolTCP, "tcp": ProtocolTCP, "https": ProtocolTLS, "tls": ProtocolTLS, "http_proxy": ProtocolHTTP} {
		if got := PortProtocol(corev1.ServicePort{Port: 8888, Name: name}); got != want {
			t.Errorf("port named %q routes as %q, want %q", name, got, want)
		}
	}
	if got := PortProtocol(corev1.ServicePort{Port: 8888, Name: "http", Protocol: corev1.ProtocolUDP}); got != ProtocolUDP {
		t.Errorf("a UDP port routes as %q", got)
	}
}
