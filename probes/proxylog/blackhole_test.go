package proxylog

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
)

// portsText writes ports as the service-entry probe's evidence does.
func portsText(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

func TestBlackholedHostsFromProxyLog(t *testing.T) {
	log, err := os.ReadFile("../testdata/service-entry/proxy.log")
	if err != nil {
		t.Fatal(err)
	}
	hosts, entries := ParseBlackholed(log, nil)
	if entries != 7 {
		t.Errorf("entries = %d, want 7", entries)
	}
	var got []string
	for _, h := range hosts {
		got = append(got, h.Host+" "+portsText(h.Ports)+" x"+string(rune('0'+h.Count)))
	}
	want := []string{"203.0.113.7 5432 x1", "api.example.com 8443 x1", "api.stripe.com 80 x2", "github.com 443 x1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blackholed = %q, want %q", got, want)
	}
}

// A JSON log under the mesh's own keys is read by its accessLogFormat: the
// built-in layouts read none of its lines, so BlackHoleCluster went unseen.
func TestBlackholedHostsInTheMeshsJSONKeys(t *testing.T) {
	f, err := accesslog.ParseFormat("meshConfig.accessLogFormat", "JSON",
		`{"t":"%START_TIME%","code":"%RESPONSE_CODE%","flags":"%RESPONSE_FLAGS%","cluster":"%UPSTREAM_CLUSTER%","host":"%REQ(:AUTHORITY)%","sni":"%REQUESTED_SERVER_NAME%","dst":"%DOWNSTREAM_LOCAL_ADDRESS%"}`)
	if err != nil {
		t.Fatal(err)
	}
	log := []byte(`{"t":"2026-12-02T03:04:05.000Z","code":0,"flags":"-","cluster":"BlackHoleCluster","host":null,"sni":"api.example.com","dst":"203.0.113.9:443"}
{"t":"2026-12-02T03:04:06.000Z","code":200,"flags":"-","cluster":"outbound|8080||orders.shop.svc.cluster.local","host":"orders:8080","sni":null,"dst":"10.96.0.9:8080"}
`)
	hosts, entries := ParseBlackholed(log, accesslog.Formats{f})
	if entries != 2 || len(hosts) != 1 || hosts[0].Host != "api.example.com" || portsText(hosts[0].Ports) != "443" {
		t.Errorf("entries %d hosts %+v, want 2 entries and api.example.com on 443", entries, hosts)
	}
	if hosts, _ := ParseBlackholed(log, nil); len(hosts) != 0 {
		t.Errorf("without the format: %+v", hosts)
	}
}
