package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// bugReportOf writes an istioctl bug-report archive (its cluster/ files
// only) of one cluster of orders: context, the control-plane namespace on
// network, and resources (kubectl get -o yaml documents).
func bugReportOf(t *testing.T, context, network string, resources ...string) string {
	t.Helper()
	list := "apiVersion: v1\nkind: List\nitems:\n"
	for _, r := range resources {
		list += "- " + strings.ReplaceAll(strings.TrimSpace(r), "\n", "\n  ") + "\n"
	}
	files := recorded.Files{
		"cluster/cluster-context":       []byte(context + "\nhttps://" + network + ".example:6443\n"),
		"cluster/k8s-resources":         []byte(list),
		"cluster/k8s-cluster-resources": []byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: istio-system, labels: {topology.istio.io/network: " + network + "}}}\n"),
	}
	p := filepath.Join(t.TempDir(), "bug-report.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := recorded.WriteArchive(f, "bug-report", files, time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return p
}

const bugReportService = `apiVersion: v1
kind: Service
metadata: {name: orders, namespace: shop}
spec: {selector: {app: orders}, ports: [{name: http, port: 8080}]}`

func bugReportGateway(network, ip string) string {
	return `apiVersion: v1
kind: Service
metadata: {name: istio-eastwestgateway, namespace: istio-system, labels: {istio: eastwestgateway, topology.istio.io/network: ` + network + `}}
spec: {type: LoadBalancer, ports: [{name: tls, port: 15443}]}
status: {loadBalancer: {ingress: [{ip: ` + ip + `}]}}`
}

func bugReportPod(name, ip, clusterID, network string) string {
	app := "orders"
	if strings.HasPrefix(name, "web") {
		app = "web"
	}
	return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: shop, labels: {app: ` + app + `, security.istio.io/tlsMode: istio}}
spec:
  containers:
  - {name: ` + app + `, image: ` + app + `}
  - name: istio-proxy
    image: proxyv2
    env: [{name: ISTIO_META_CLUSTER_ID, value: ` + clusterID + `}, {name: ISTIO_META_NETWORK, value: ` + network + `}]
status: {podIP: ` + ip + `, phase: Running, conditions: [{type: Ready, status: "True"}]}`
}

func bugReportSlice(ip, pod string) string {
	return `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: orders-` + pod + `, namespace: shop, labels: {kubernetes.io/service-name: orders}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [` + ip + `], conditions: {ready: true}, targetRef: {kind: Pod, name: ` + pod + `, namespace: shop}}]`
}

// One istioctl bug report a cluster (istioctl bug-report takes one
// --context): check --bug-report A --bug-report B triages A's cluster with
// B's as the remote one named by B's cluster/cluster-context, as
// --remote-contexts would live: the multicluster step reads both and
// names each endpoint's context. Two reports of one context are refused
// by name.
func TestCheckBugReportPerCluster(t *testing.T) {
	east := bugReportOf(t, "east", "network1", bugReportService, bugReportGateway("network1", "172.18.1.10"),
		bugReportPod("web-1", "10.1.0.9", "cluster1", "network1"), bugReportPod("orders-a", "10.1.0.5", "cluster1", "network1"), bugReportSlice("10.1.0.5", "orders-a"))
	west := bugReportOf(t, "arn:aws:eks:eu-west-1:123456789012:cluster/west", "network2", bugReportService, bugReportGateway("network2", "172.18.2.10"),
		bugReportPod("orders-b", "10.2.0.5", "cluster2", "network2"), bugReportSlice("10.2.0.5", "orders-b"))

	r := runCheck(t, "-n", "shop", "svc/orders", "--from", "pod/web-1", "--bug-report", east, "--bug-report", west, "-o", "json")
	rep := parseReport(t, r)
	facts := rep.facts("multicluster")
	var endpoints []string
	for _, e := range facts["mc_endpoints"].([]any) {
		endpoints = append(endpoints, e.(string))
	}
	want := []string{
		"east: 10.1.0.5 (pod orders-a) network network1: direct",
		"arn:aws:eks:eu-west-1:123456789012:cluster/west: 10.2.0.5 (pod orders-b) network network2: via gateway 172.18.2.10:15443",
	}
	if !slices.Equal(endpoints, want) || facts["mc_remotes_read"] != float64(1) {
		t.Errorf("multicluster facts %v\nmc_endpoints %q, want %q\nstderr %s", facts, endpoints, want, r.stderr)
	}

	again := runCheck(t, "-n", "shop", "svc/orders", "--bug-report", east, "--bug-report", bugReportOf(t, "east", "network1", bugReportService), "-o", "json")
	if again.code != exitTriage || !strings.Contains(again.stderr, `are both of context "east": give one bug report a cluster`) {
		t.Errorf("two reports of one context: exit %d, stderr %q", again.code, again.stderr)
	}
}
