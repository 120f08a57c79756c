package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"
	"istio.io/api/annotation"
	"istio.io/api/label"
	networkingapi "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshtriage/meshtriage/lab"
)

// The generated cluster: services spread round-robin over the namespaces,
// podsPerService pods each, an EndpointSlice per service, a DestinationRule
// for every other service, a VirtualService for every fourth and a
// PeerAuthentication per generated namespace.
const (
	podsPerService = 5
	benchUserAgent = "meshlab-bench/populate"
)

type populator struct {
	kube      kubernetes.Interface
	istio     istioclient.Interface
	namespace []string // namespace[0] is the target's: its bulk must not change the diagnosis
	workers   int
	services  int // created so far
	created   atomic.Int64
}

func newPopulator(l *lab.Lab, targetNS string, namespaces, workers int) (*populator, error) {
	cfg := rest.CopyConfig(l.Config)
	// Setup is not what is measured: no client-side rate limit, protobuf for
	// the built-in kinds (the CRDs only speak JSON).
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = benchUserAgent
	istio, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kcfg := rest.CopyConfig(cfg)
	kcfg.ContentType = "application/vnd.kubernetes.protobuf"
	kcfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return nil, err
	}
	p := &populator{kube: kube, istio: istio, workers: workers, namespace: []string{targetNS}}
	for i := 1; i < namespaces; i++ {
		p.namespace = append(p.namespace, fmt.Sprintf("bench-%02d", i))
	}
	return p, nil
}

// namespaces creates the generated namespaces, their default
// ServiceAccounts (no controller does here) and PeerAuthentications.
func (p *populator) namespaces(ctx context.Context) error {
	for i, ns := range p.namespace {
		_, err := p.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns, Labels: map[string]string{"istio-injection": "enabled"},
		}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err = p.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if i == 0 {
			continue // the scenario's own mTLS policy stands in the target namespace
		}
		_, err = p.istio.SecurityV1().PeerAuthentications(ns).Create(ctx, &securityv1.PeerAuthentication{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: securityapi.PeerAuthentication{Mtls: &securityapi.PeerAuthentication_MutualTLS{
				Mode: securityapi.PeerAuthentication_MutualTLS_STRICT,
			}},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// growTo creates services (and their pods, slices, Istio config) until the
// cluster holds pods generated pods, with workers creating concurrently.
func (p *populator) growTo(ctx context.Context, pods int) error {
	want := pods / podsPerService
	jobs := make(chan int)
	errs := make(chan error, p.workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := p.service(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for i := p.services; i < want; i++ {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	p.services = want
	return ctx.Err()
}

func (p *populator) service(ctx context.Context, i int) error {
	ns := p.namespace[i%len(p.namespace)]
	name := fmt.Sprintf("svc-%04d", i)
	svc, err := p.kube.CoreV1().Services(ns).Create(ctx, serviceFor(name), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("service %s/%s: %w", ns, name, err)
	}
	p.created.Add(1)
	var endpoints []discoveryv1.Endpoint
	for j := range podsPerService {
		k := i*podsPerService + j
		pod := podFor(name, k)
		if _, err := p.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pod %s/%s: %w", ns, pod.Name, err)
		}
		p.created.Add(1)
		ready := true
		endpoints = append(endpoints, discoveryv1.Endpoint{
			Addresses:  []string{podIP(k)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready},
			NodeName:   ptr(lab.NodeName),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name},
		})
	}
	port, proto := int32(8080), corev1.ProtocolTCP
	_, err = p.kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-x7k2p",
			Labels: map[string]string{
				discoveryv1.LabelServiceName: name,
				discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: svc.UID}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: &port, Protocol: &proto}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", ns, name, err)
	}
	p.created.Add(1)
	host := name + "." + ns + ".svc.cluster.local"
	if i%2 == 0 {
		_, err := p.istio.NetworkingV1().DestinationRules(ns).Create(ctx, &networkingv1.DestinationRule{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: networkingapi.DestinationRule{
				Host: host,
				TrafficPolicy: &networkingapi.TrafficPolicy{
					ConnectionPool: &networkingapi.ConnectionPoolSettings{Http: &networkingapi.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: 1024}},
					OutlierDetection: &networkingapi.OutlierDetection{
						Consecutive_5XxErrors: wrapperspb.UInt32(5), MaxEjectionPercent: 50,
					},
				},
				Subsets: []*networkingapi.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("destinationrule %s/%s: %w", ns, name, err)
		}
		p.created.Add(1)
	}
	if i%4 == 0 {
		_, err := p.istio.NetworkingV1().VirtualServices(ns).Create(ctx, &networkingv1.VirtualService{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: networkingapi.VirtualService{
				Hosts: []string{host},
				Http: []*networkingapi.HTTPRoute{{
					Route: []*networkingapi.HTTPRouteDestination{{Destination: &networkingapi.Destination{Host: host, Subset: "v1"}}},
				}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("virtualservice %s/%s: %w", ns, name, err)
		}
		p.created.Add(1)
	}
	return nil
}

func serviceFor(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// podFor is an injected pod of about the size a real one has: the app and
// an istio-proxy sidecar with its usual ports, env and resources. Status is
// left out: nothing measured reads the generated pods' status, and writing
// it would double the setup.
func podFor(svc string, k int) *corev1.Pod {
	name := fmt.Sprintf("%s-7d9c6f4b8-%05d", svc, k)
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"app": svc, "version": "v1", "pod-template-hash": "7d9c6f4b8",
				label.SecurityTlsMode.Name:          "istio",
				label.ServiceCanonicalName.Name:     svc,
				label.ServiceCanonicalRevision.Name: "v1",
			},
			Annotations: map[string]string{
				annotation.SidecarStatus.Name:             `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`,
				"prometheus.io/scrape":                    "true",
				"prometheus.io/port":                      "15020",
				"prometheus.io/path":                      "/stats/prometheus",
				"kubectl.kubernetes.io/default-container": "app",
			},
		},
		Spec: corev1.PodSpec{
			NodeName:           lab.NodeName,
			ServiceAccountName: "default",
			Containers: []corev1.Container{
				{
					Name: "app", Image: "registry.example/" + svc + ":1.4.2",
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env:       env("PORT", "8080", "LOG_LEVEL", "info", "UPSTREAM_TIMEOUT", "3s"),
					Resources: res,
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/app-health/app/readyz", Port: intstr.FromInt32(15020),
					}}},
				},
				{
					Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.24.2",
					Args:  []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"},
					Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090}},
					Env: env("PILOT_CERT_PROVIDER", "istiod", "CA_ADDR", "istiod.istio-system.svc:15012", "PROXY_CONFIG", "{}",
						"ISTIO_META_POD_PORTS", `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`,
						"ISTIO_META_APP_CONTAINERS", "app", "ISTIO_META_CLUSTER_ID", "Kubernetes", "ISTIO_META_INTERCEPTION_MODE", "REDIRECT",
						"ISTIO_META_WORKLOAD_NAME", svc, "ISTIO_META_MESH_ID", "cluster.local", "TRUST_DOMAIN", "cluster.local"),
					Resources: res,
				},
			},
		},
	}
}

func podIP(k int) string { return fmt.Sprintf("10.245.%d.%d", k/250, k%250+2) }

func ptr[T any](v T) *T { return &v }

// progress logs the creation rate every few seconds until stop is closed.
func (p *populator) progress(logf func(string, ...any), stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	start, last := time.Now(), p.created.Load()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			n := p.created.Load()
			logf("created %d objects (%.0f/s over the last 10 s, %s so far)", n, float64(n-last)/10, time.Since(start).Round(time.Second))
			last = n
		}
	}
}
