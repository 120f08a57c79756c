package netstat

import (
	"reflect"
	"testing"
)

// sample is `netstat -natpw` as istioctl bug-report runs it in istio-proxy
// (net-tools 2.10 layout, the shape of the istio-proxy `netstat -ltnp`
// samples in istio/istio#25177 and kubeflow/kubeflow#5938): Envoy's and
// pilot-agent's sockets named, the app's "-" (another UID), an app bound
// to 127.0.0.1:8080, an established inbound connection, a raw socket (-w).
const sample = `Active Internet connections (servers and established)
Proto Recv-Q Send-Q Local Address           Foreign Address         State       PID/Program name    
tcp        0      0 127.0.0.1:8080          0.0.0.0:*               LISTEN      -                   
tcp        0      0 0.0.0.0:15021           0.0.0.0:*               LISTEN      16/envoy            
tcp        0      0 0.0.0.0:15090           0.0.0.0:*               LISTEN      16/envoy            
tcp        0      0 127.0.0.1:15000         0.0.0.0:*               LISTEN      16/envoy            
tcp        0      0 0.0.0.0:15001           0.0.0.0:*               LISTEN      16/envoy            
tcp        0      0 0.0.0.0:15006           0.0.0.0:*               LISTEN      16/envoy            
tcp        0      0 127.0.0.1:15004         0.0.0.0:*               LISTEN      1/pilot-agent       
tcp        0      0 0.0.0.0:8081            0.0.0.0:*               LISTEN      -                   
tcp        0      0 10.244.1.17:15006       10.244.0.9:51702        ESTABLISHED 16/envoy            
tcp6       0      0 :::15020                :::*                    LISTEN      1/pilot-agent       
tcp6       0      0 ::1:9000                :::*                    LISTEN      -                   
raw        0      0 0.0.0.0:255             0.0.0.0:*               7           -                   
`

func TestListeners(t *testing.T) {
	ls := Listeners([]byte(sample))
	if len(ls) != 10 {
		t.Fatalf("%d listeners, want 10: %+v", len(ls), ls)
	}
	app := OnPort(ls, 8080)
	if len(app) != 1 || app[0].Host != "127.0.0.1" || app[0].Program != "-" || !app[0].Loopback() {
		t.Errorf("8080: %+v", app)
	}
	if l := OnPort(ls, 8081); len(l) != 1 || l[0].Loopback() {
		t.Errorf("8081: %+v", l)
	}
	if l := OnPort(ls, 9000); len(l) != 1 || l[0].Host != "::1" || !l[0].Loopback() {
		t.Errorf("9000: %+v", l)
	}
	if l := OnPort(ls, 15020); len(l) != 1 || l[0].Host != "::" || l[0].Loopback() || l[0].Program != "1/pilot-agent" {
		t.Errorf("15020: %+v", l)
	}
	var got []int32
	for _, l := range OnPort(ls, 15006) {
		got = append(got, l.Port)
	}
	if !reflect.DeepEqual(got, []int32{15006}) {
		t.Errorf("15006: the established connection is no listener: %v", got)
	}
	if (Listener{Host: "::ffff:127.0.0.1"}).Loopback() != true || (Listener{Host: "10.244.1.17"}).Loopback() {
		t.Error("loopback")
	}
}
