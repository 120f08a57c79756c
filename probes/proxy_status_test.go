package probes

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/mesh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestProxyStatus(t *testing.T) {
	p := ProxyStatusProbe{}
	ctx := context.Background()
	orders := cluster.PodRef{Namespace: "shop", Name: "orders-5f6c8-x2k9q"}
	gateway := cluster.PodRef{Namespace: "istio-system", Name: "istio-ingressgateway-7b9c-qq2lm"}
	cases := []struct {
		name   string
		file   string
		source *cluster.PodRef
		err    error
		status Status
		facts  Facts
		inSum  string
	}{
		{"EDS stale with a NACK", "syncz.json", &evSource, nil, StatusFail,
			Facts{"xds_proxy_known": true, "xds_stale_types": []string{"EDS"}, "xds_cds": "SYNCED", "xds_eds": "STALE", "xds_lds": "SYNCED", "xds_rds": "SYNCED", "xds_istiod_version": "1.24.2"},
			"EDS STALE: malformed cluster load assignment"},
		// LDS never acknowledged is stale; RDS NOT SENT is istiod having nothing to send.
		{"never acknowledged", "syncz.json", &orders, nil, StatusFail,
			Facts{"xds_stale_types": []string{"LDS"}, "xds_lds": "STALE", "xds_rds": "NOT SENT"},
			"LDS STALE (Never Acknowledged)"},
		{"synced", "syncz.json", &gateway, nil, StatusPass,
			Facts{"xds_stale_types": []string{}, "xds_cds": "SYNCED"}, "is SYNCED with istiod for CDS, LDS, EDS and RDS; 2 of 3 proxies"},
		{"xDS-shaped syncz", "syncz_xds.json", &evSource, nil, StatusFail,
			Facts{"xds_stale_types": []string{"RDS"}, "xds_eds": "NOT SENT", "xds_rds": "STALE", "xds_istiod_version": "1.25.0"}, "RDS STALE"},
		{"not connected", "syncz.json", &cluster.PodRef{Namespace: "shop", Name: "web-new"}, nil, StatusWarn,
			Facts{"xds_proxy_known": false, "xds_stale_types": []string{}, "xds_cds": "UNKNOWN", "xds_istiod_version": ""}, "istiod does not list web-new.shop"},
		{"istiod unreachable", "syncz.json", &evSource, &cluster.UnreachableError{What: "istiod", Err: errors.New("no running istiod pod in istio-system")}, StatusError,
			nil, "cannot read istiod /debug/syncz: istiod unreachable: no running istiod pod"},
		{"malformed", "", &evSource, nil, StatusError, nil, "cannot parse istiod /debug/syncz"},
		{"no source", "syncz.json", nil, nil, StatusSkipped, nil, envoyadmin.NoSourceSummary},
		{"source without sidecar", "syncz.json", &cluster.PodRef{Namespace: "batch", Name: "report-cron"}, nil, StatusSkipped, nil, "has no istio-proxy"},
		{"source pod gone", "syncz.json", &cluster.PodRef{Namespace: "shop", Name: "web-gone"}, nil, StatusError, nil, "cannot get source pod shop/web-gone: not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cronPod := evPod("report-cron", "report", false)
			cronPod.Namespace = "batch"
			f := newFakeCluster(t, evPod("web-7d9", "web", true), evPod("web-new", "web", true), cronPod,
				evPod(orders.Name, "orders", true), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: gateway.Name, Namespace: gateway.Namespace},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: mesh.ProxyContainer}}}})
			if c.file != "" {
				f.istiod["/debug/syncz"] = evTestdata(t, "proxy-status", c.file)
			} else {
				f.istiod["/debug/syncz"] = []byte(`[{"proxy": "web-7d9.shop", "cluster_sent": 5`)
			}
			if c.err != nil {
				f.errs["istiod:/debug/syncz"] = c.err
			}
			r := Run(ctx, p, f, cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: c.source})
			evCheck(t, p, r)
			if r.Status != c.status || !strings.Contains(r.Summary, c.inSum) {
				t.Errorf("%s %q, want %s with %q", r.Status, r.Summary, c.status, c.inSum)
			}
			for k, v := range c.facts {
				if !reflect.DeepEqual(r.Facts[k], v) {
					t.Errorf("%s = %#v, want %#v", k, r.Facts[k], v)
				}
			}
			if c.source != nil && r.Commands[len(r.Commands)-1] != "istioctl proxy-status "+c.source.Name+"."+c.source.Namespace {
				t.Errorf("commands %q", r.Commands)
			}
		})
	}
}

// syncz lists only the proxies connected to the istiod replica asked, so
// the probe asks each running replica (Ready first, then the oldest) until
// one lists the source proxy, as istioctl proxy-status asks them all.
func TestProxyStatusAsksEachIstiodReplica(t *testing.T) {
	istiod := func(name string, age time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster.DefaultControlPlane, Labels: map[string]string{"app": "istiod"},
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC).Add(-age))},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	// syncz.json lists web-7d9.shop; this one lists only web-new.shop.
	onlyNew := []byte(`[{"proxy":"web-new.shop","proxy_type":"sidecar","istio_version":"1.24.2",` +
		`"cluster_sent":"a","cluster_acked":"a","listener_sent":"b","listener_acked":"b"}]`)
	for _, tc := range []struct {
		name     string
		replicas []runtime.Object
		answers  map[string][]byte
		errs     map[string]error
		known    bool
		asked    []string
		facts    Facts
		inSum    string
	}{
		{"one replica, proxy not listed", []runtime.Object{istiod("istiod-a", time.Hour)}, nil, nil,
			false, []string{"istiod-a"}, Facts{"xds_istiod_replicas": 1, "xds_istiod_asked": 1},
			"the only istiod replica does not list it: the proxy is not connected to istiod"},
		{"proxy on the second replica", []runtime.Object{istiod("istiod-b", time.Minute), istiod("istiod-a", time.Hour)},
			map[string][]byte{"istiod-b:/debug/syncz": onlyNew}, nil,
			true, []string{"istiod-a", "istiod-b"}, Facts{"xds_istiod_replicas": 2, "xds_istiod_asked": 2, "xds_cds": "SYNCED"},
			"web-new.shop is SYNCED"},
		{"proxy on the first replica: the second is not asked", []runtime.Object{istiod("istiod-b", time.Minute), istiod("istiod-a", time.Hour)},
			map[string][]byte{"istiod-a:/debug/syncz": onlyNew}, nil,
			true, []string{"istiod-a"}, Facts{"xds_istiod_replicas": 2, "xds_istiod_asked": 1},
			"web-new.shop is SYNCED"},
		{"no replica lists it", []runtime.Object{istiod("istiod-a", time.Hour), istiod("istiod-b", time.Minute)}, nil, nil,
			false, []string{"istiod-a", "istiod-b"}, Facts{"xds_istiod_replicas": 2, "xds_istiod_asked": 2},
			"none of the 2 istiod replicas lists it"},
		{"a replica that does not answer leaves it open", []runtime.Object{istiod("istiod-a", time.Hour), istiod("istiod-b", time.Minute)}, nil,
			map[string]error{"istiod:istiod-b:/debug/syncz": &cluster.UnreachableError{What: "istiod istio-system/istiod-b", Err: errors.New("connection refused")}},
			false, []string{"istiod-a", "istiod-b"}, Facts{"xds_istiod_replicas": 2, "xds_istiod_asked": 1},
			"1 of 2 istiod replicas answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t, append(tc.replicas, evPod("web-new", "web", true))...)
			f.istiod["/debug/syncz"] = evTestdata(t, "proxy-status", "syncz.json")
			for k, v := range tc.answers {
				f.istiod[k] = v
			}
			for k, v := range tc.errs {
				f.errs[k] = v
			}
			r := Run(context.Background(), ProxyStatusProbe{}, f, cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "shop", Name: "web-new"}})
			evCheck(t, ProxyStatusProbe{}, r)
			if r.Facts["xds_proxy_known"] != tc.known || !strings.Contains(r.Summary, tc.inSum) {
				t.Errorf("%q %v", r.Summary, r.Facts)
			}
			for k, v := range tc.facts {
				if r.Facts[k] != v {
					t.Errorf("%s = %v, want %v", k, r.Facts[k], v)
				}
			}
			if !reflect.DeepEqual(f.istiodAsked, tc.asked) {
				t.Errorf("asked %q, want %q", f.istiodAsked, tc.asked)
			}
		})
	}
}
