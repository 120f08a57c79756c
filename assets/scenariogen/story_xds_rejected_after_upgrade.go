package main

import (
	"fmt"
	"time"
)

var xdsRejectedAfterUpgrade = Scenario{
	Name:    "xds-rejected-after-upgrade",
	Title:   "After an in-place upgrade, web's old proxy rejects every cluster istiod pushes",
	Summary: "istiod upgraded in place to 1.24; web's 1.22 proxy NACKs every CDS push, so the new v2 subset's cluster never arrives: 503 NC",
	Description: `
On Sunday istiod was upgraded in place from 1.22.6 to 1.24.2 and every namespace was restarted but
web, frozen for a release. web's proxy still runs 1.22.6: two minors behind istiod, outside Istio's
supported skew. Since the upgrade istiod's clusters carry config its Envoy cannot build, and it
rejects every CDS push: istiod records the NACK (syncz lastError), web's
Envoy counts update_rejected and logs "delta config for ...Cluster rejected", and keeps the clusters
it had before the upgrade. At 13:37 orders shipped v2 behind a new DestinationRule subset; at 13:55
the VirtualService moved all traffic to it. The route arrived (RDS is accepted), the cluster did not:
every call from web is a 503 NC cluster_not_found. A restart of web under the same istiod would
start a proxy of the new release.
`,
	Expect: []string{"xds.config-rejected"},
	Now:    at("2026-12-02T14:18:09"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildXDSRejectedAfterUpgrade,
}

func buildXDSRejectedAfterUpgrade(s *Shop) Target {
	now := s.now
	upgraded := at("2026-11-29T22:41:17")
	const oldRelease = "1.22.6"
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(9*day + 4*time.Hour)), func(p *PodSpec) {
		p.Hold = true
		p.ProxyVersion = oldRelease
	})
	// Restarted after the upgrade: v1 on the new proxy.
	v1 := s.ordersPods(upgraded.Add(47*time.Minute), nil, func(i int, p *PodSpec) {
		p.Hold = true
		p.Version = "v1"
		p.Image = "registry.shop.example.com/orders:2.16.3"
	})
	shipped, shifted := at("2026-12-02T13:37:52"), at("2026-12-02T13:55:20")
	v2 := s.ordersPods(shipped, []string{"orders-v2-7f6b9d8c4-h5k2m", "orders-v2-7f6b9d8c4-t8r4w"}, func(i int, p *PodSpec) {
		p.Hold = true
		p.Version = "v2"
		p.Image = "registry.shop.example.com/orders:2.17.0"
		p.Controller = "orders-v2-7f6b9d8c4"
		p.Host = []int{52, 38}[i]
	})
	pods := append(append([]*Pod{}, v1...), v2...)
	s.slice(Slice{Name: "web-8c2d1", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-4a7e2", Service: "orders", Endpoints: ready(pods...), Created: shipped.Add(41 * time.Second)})
	const host = "orders.shop.svc.cluster.local"
	s.destinationRule("orders", shipped, Object{{"host", host}, {"subsets", []Object{
		{{"name", "v1"}, {"labels", Object{{"version", "v1"}}}},
		{{"name", "v2"}, {"labels", Object{{"version", "v2"}}}},
	}}})
	s.virtualService("orders", shifted, Object{{"hosts", []string{host}}, {"http", []Object{{
		{"name", "orders-v2"}, {"route", []Object{{{"destination", Object{{"host", host}, {"subset", "v2"}}}, {"weight", 100}}}},
	}}}})
	s.webUpstreamLogs(web, pods, nil)

	// Until the shift, web's calls went to v1 by the default route.
	s.succeed(web, "orders", v1, now.Add(-29*time.Minute), shifted, 2800)
	noCluster := func(t time.Time, _ int) {
		s.call(Call{From: web, Service: "orders", At: t, Code: 503, Flags: "NC", Details: "cluster_not_found", NoUpstreamLog: true,
			TxBytes: exactly(0), Cluster: "-", Route: "orders-v2"})
	}
	s.traffic(shifted.Add(2*time.Second), s.windowStart(), 2100, noCluster)
	s.inWindow(2, noCluster)

	// Every CDS push since the upgrade: the new cluster is the first
	// Envoy names, the rest it keeps as they were.
	const v2Cluster = "outbound|8080|v2|" + host
	reason := fmt.Sprintf("Error adding/updating cluster(s) %s: Didn't find a registered implementation for 'istio.metadata_exchange' with type URL: 'type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange'", v2Cluster)
	var rejections []string
	pushes := []time.Time{shipped.Add(1200 * time.Millisecond), shipped.Add(41*time.Second + 300*time.Millisecond), shifted.Add(900 * time.Millisecond),
		at("2026-12-02T14:03:44"), at("2026-12-02T14:11:02"), at("2026-12-02T14:16:37")}
	for _, t := range pushes {
		rejections = append(rejections, agentTime(t)+"\twarning\tenvoy config external/envoy/source/extensions/config_subscription/grpc/delta_subscription_state.cc:283\t"+
			"delta config for type.googleapis.com/envoy.config.cluster.v3.Cluster rejected: "+reason+"\tthread=21")
	}
	s.world.log(web.Namespace, web.Name, "istio-proxy", false, rejections...)

	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: v1}),
		s.outbound(Outbound{Service: "orders", Pods: v1, Subset: "v1"}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{Routes: []Object{weightedRoute([]WeightedCluster{{v2Cluster, 100}}, "orders-v2")}, CDSRejected: 37})

	// istiod's record of it: CDS sent at the last push, acknowledged last
	// before the upgrade, the NACK's error kept until an ACK.
	acked, lastPush := upgraded.Add(-3*time.Hour), pushes[len(pushes)-1]
	rejected := Object{}
	resources := Object{}
	for _, typ := range []struct{ flat, url string }{
		{"cluster", "type.googleapis.com/envoy.config.cluster.v3.Cluster"},
		{"listener", "type.googleapis.com/envoy.config.listener.v3.Listener"},
		{"route", "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"},
		{"endpoint", "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"},
	} {
		sent := s.nonce(lastPush)
		ack := sent
		entry := Object{{"sent", sent}}
		if typ.flat == "cluster" {
			ack = s.nonce(acked)
		}
		entry.Set("acked", ack)
		entry.Set("sentTime", apiTimeNanos(lastPush))
		if typ.flat == "cluster" {
			entry.Set("lastError", reason)
		}
		rejected.Set(typ.flat+"_sent", sent)
		rejected.Set(typ.flat+"_acked", ack)
		resources.Set(typ.url, entry)
	}
	rejected.Set("resources", resources)
	s.syncz[web.ProxyID()] = rejected
	s.addFile("istiod/version.txt", istioVersion+"-f4ed5a1d8fe1f3f2d1c9d5d8b6c58a1f0cfbf33c-Clean")
	return Target{Service: "orders", Source: web}
}

// apiTimeNanos is a time as istiod's JSON writes a time.Time.
func apiTimeNanos(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
