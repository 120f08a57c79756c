package proxylog

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
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
	hosts, entries := ParseBlackholed(log)
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
