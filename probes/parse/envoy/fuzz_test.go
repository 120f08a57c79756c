package envoy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// addSeeds adds the named files of testdata and of the realworld samples
// (absent outside the shared workspace) to f's seed corpus.
func addSeeds(f *testing.F, testdata []string, realworldFiles []string) {
	for _, name := range testdata {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	for _, name := range realworldFiles {
		if b, err := os.ReadFile(filepath.Join(realworld, name)); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseClustersJSON: /clusters?format=json never panics; hosts have
// an address and a stats map, names no alt_stat_name delimiter.
func FuzzParseClustersJSON(f *testing.F) {
	addSeeds(f, []string{"clusters.json", "clusters_health_flags.json"}, []string{"clusters_json/istioctl_testdata_clusters.json"})
	f.Add([]byte(`{"cluster_statuses":[{"name":"outbound|80||a.b.svc.cluster.local;","host_statuses":[{"address":{"socket_address":{"address":"::1","port_value":80}}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := ParseClusters(data)
		checkClusters(t, cs, err, nil)
	})
}

// FuzzParseClustersText: the plain-text /clusters never panics.
func FuzzParseClustersText(f *testing.F) {
	addSeeds(f, []string{"clusters_health_flags.txt"}, []string{"clusters_text/istio6085_plain_clusters.txt"})
	f.Add([]byte("outbound|80||a.b.svc.cluster.local;::[fd00::1]:80::health_flags::/failed_outlier_check\noutbound|80||a.b.svc.cluster.local;::added_via_api::true\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := ParseClustersText(data)
		checkClusters(t, cs, err, data)
	})
}

// checkClusters: hosts have a stats map; of a name printed as text
// (raw), one alt_stat_name delimiter was dropped, so a name still ending in
// ";" was printed with two.
func checkClusters(t *testing.T, cs []Cluster, err error, raw []byte) {
	if err != nil {
		return
	}
	for _, c := range cs {
		if raw != nil && strings.HasSuffix(c.Name, ";") && !bytes.Contains(raw, []byte(c.Name+";")) {
			t.Errorf("cluster %q kept its delimiter", c.Name)
		}
		for _, h := range c.Hosts {
			if h.Stats == nil {
				t.Errorf("host %q of %q without a stats map", h.Address, c.Name)
			}
			_ = h.Healthy()
		}
	}
}

// FuzzParseListeners: /listeners?format=json never panics.
func FuzzParseListeners(f *testing.F) {
	addSeeds(f, []string{"listeners.json"}, []string{"listeners_kuma.json"})
	f.Fuzz(func(t *testing.T, data []byte) {
		ls, err := ParseListeners(data)
		if err != nil {
			return
		}
		for _, l := range ls {
			_ = l.CoversPort(l.Port, []string{l.IP})
			_ = l.CoversPort(8080, nil)
		}
	})
}

var configDumpSeeds = []string{"config_dump.json", "config_dump_sidecar.json", "config_dump_endpoints.json"}
var realworldDumps = []string{"config_dump/wrapped_istio8846_outlier.json", "config_dump/ossm2_ingressgateway.json"}

// FuzzStreamConfigDump: the streaming decoder never panics, and returns
// only clusters the matcher chose.
func FuzzStreamConfigDump(f *testing.F) {
	addSeeds(f, configDumpSeeds, realworldDumps)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := StreamConfigDump(bytes.NewReader(data), outboundOnly)
		if err != nil {
			return
		}
		checkDump(t, d)
	})
}

// FuzzDecodeConfigDump: the whole-document decoder never panics.
func FuzzDecodeConfigDump(f *testing.F) {
	addSeeds(f, configDumpSeeds, realworldDumps)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeConfigDump(data, outboundOnly)
		if err != nil {
			return
		}
		checkDump(t, d)
	})
}

func outboundOnly(name string) bool { return strings.HasPrefix(name, "outbound|") }

func checkDump(t *testing.T, d ConfigDump) {
	for _, c := range d.Clusters {
		if !outboundOnly(c.Name) {
			t.Errorf("cluster %q decoded though not asked for", c.Name)
		}
		if c.Consecutive5xx < 0 || c.ConsecutiveGatewayFailure < 0 {
			t.Errorf("%+v", c)
		}
	}
	_ = d.FallbackTypes()
}

// FuzzParseStats: /stats never panics, and every name it keeps is a name
// of the input, normalised once (clustername.StatName), with its value.
func FuzzParseStats(f *testing.F) {
	addSeeds(f, []string{"stats.txt", "stats_default.txt", "stats_active_overflow.txt"}, []string{"stats/istio125_echo_server_pending.txt", "stats/istio_doc_circuit_breaking_old.txt"})
	f.Fuzz(func(t *testing.T, data []byte) {
		printed := map[string]bool{}
		for _, line := range strings.Split(string(data), "\n") {
			if i := strings.LastIndex(line, ": "); i > 0 {
				printed[clustername.StatName(strings.TrimSpace(line[:i]))] = true
			}
		}
		for name := range ParseStats(data, nil) {
			if !printed[name] {
				t.Errorf("stat %q is no name of the input, normalised", name)
			}
		}
	})
}

// FuzzParsePrometheus: /stats/prometheus never panics.
func FuzzParsePrometheus(f *testing.F) {
	addSeeds(f, nil, []string{"prometheus/istio21125_fragment.txt", "prometheus/istio21125_head.txt"})
	if b, err := os.ReadFile("../../testdata/metrics/after.prom"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParsePrometheus(data)
		if err != nil {
			return
		}
		for _, samples := range m {
			for _, s := range samples {
				if strings.HasSuffix(s.Labels["cluster_name"], ";") {
					t.Errorf("cluster_name %q kept its delimiter", s.Labels["cluster_name"])
				}
			}
		}
	})
}

// FuzzParseSyncz: istiod's syncz (HTTP and xDS shapes) never panics; every
// state is one istioctl prints.
func FuzzParseSyncz(f *testing.F) {
	addSeeds(f, []string{"syncz.json", "syncz_xds.json", "istiod_syncz_nack.json"}, []string{"syncz/istio110_praetorian.json", "syncz/istio117_istioinaction.json"})
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseSyncz(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			for _, tv := range p.Types() {
				if tv[1] != Synced && tv[1] != Stale && tv[1] != NotSent {
					t.Errorf("%s of %s is %q", tv[0], p.ProxyID, tv[1])
				}
			}
			// A rejected type is never SYNCED: the proxy runs what it
			// accepted before.
			for _, ty := range p.RejectedTypes() {
				if p.Detail[ty] == "" || p.Rejected[ty] == "" {
					t.Errorf("%s of %s rejected without a reason: %+v", ty, p.ProxyID, p)
				}
			}
		}
	})
}

// FuzzParseEdsz: istiod's /debug/edsz never panics; counts are
// consistent.
func FuzzParseEdsz(f *testing.F) {
	addSeeds(f, []string{"istiod_edsz.json"}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseEdsz(data, nil)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Healthy > e.Total || len(e.Addresses) != e.Total {
				t.Errorf("%+v", e)
			}
		}
	})
}

// FuzzParseXDSRejections: any log is read without a panic, and every
// rejection names a type.
func FuzzParseXDSRejections(f *testing.F) {
	addSeeds(f, []string{"xds_rejected.log"}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, r := range ParseXDSRejections(data) {
			if r.Type == "" {
				t.Errorf("%+v", r)
			}
		}
	})
}
