package envoy

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzStreamRouteConfigs: route configurations of any /config_dump never
// panic the reader, route cluster names carry no alt_stat_name delimiter,
// and picking a virtual host for any authority never panics.
func FuzzStreamRouteConfigs(f *testing.F) {
	addSeeds(f, nil, []string{"config_dump/ossm2_ingressgateway.json", "config_dump/slime_scout.json"})
	f.Add([]byte(`{"configs":[{"@type":"type.googleapis.com/envoy.admin.v3.RoutesConfigDump","dynamic_route_configs":[{"route_config":{"name":"http.8080","ignore_port_in_host_matching":true,"virtual_hosts":[{"name":"blackhole:80","domains":["*"],"routes":[]},{"name":"shop.example.com:80","domains":["shop.example.com","*.shop.*"],"routes":[{"match":{"prefix":"/"},"route":{"weighted_clusters":{"clusters":[{"name":"outbound|8080|v1|orders.shop.svc.cluster.local;","weight":90}]}}}]}]}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rcs, err := StreamRouteConfigs(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, rc := range rcs {
			for _, vh := range rc.VirtualHosts {
				for _, r := range vh.Routes {
					for _, c := range r.Clusters {
						if strings.HasSuffix(c.Name, ";") && !bytes.Contains(data, []byte(c.Name+";")) {
							t.Errorf("route cluster %q kept its delimiter", c.Name)
						}
					}
				}
			}
			for _, host := range []string{"", "*", "shop.example.com:8080", "[::1]:80", "x.shop.y"} {
				_ = rc.VirtualHostFor(host)
			}
		}
	})
}
