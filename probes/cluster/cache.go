package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Cache is a Cluster that reads each distinct thing once per wave of probes:
// several probes of a wave ask for the same Service, pods and Envoy dumps,
// and a config_dump can be 100 MB. Concurrent identical reads share one
// request; results and errors are kept until Reset, except errors caused by
// a caller's context ending, which say nothing about the cluster. Every
// caller gets its own deep copy, so a probe that edits what it read cannot
// change what another probe sees.
type Cache struct {
	c       Cluster
	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
}

var _ Cluster = (*Cache)(nil)

type cacheKey struct {
	op        string
	namespace string
	name      string // object name, pod name, path or selector
	path      string
	logs      LogOptions
}

type cacheEntry struct {
	done chan struct{}
	val  any
	err  error
}

// NewCache memoises c's reads until Reset.
func NewCache(c Cluster) *Cache {
	return &Cache{c: c, entries: map[cacheKey]*cacheEntry{}}
}

// Reset forgets every result, so a re-run (verification after a fix) sees
// the cluster as it is now. Reads in flight finish for their callers but
// are not kept.
func (c *Cache) Reset() {
	c.mu.Lock()
	c.entries = map[cacheKey]*cacheEntry{}
	c.mu.Unlock()
}

// Info is not a read of the cluster.
func (c *Cache) Info() ClusterInfo { return c.c.Info() }

// read returns the value under key, fetching it if no caller has. The first
// caller fetches with its own context; the others wait for that result or
// for their own context, whichever ends first. If the fetch ended because
// the fetching caller's context did, the entry is dropped and a waiter whose
// context is still live fetches again.
func read[T any](ctx context.Context, c *Cache, key cacheKey, fetch func(context.Context) (T, error), clone func(T) T) (T, error) {
	var zero T
	for {
		c.mu.Lock()
		e, found := c.entries[key]
		if !found {
			e = &cacheEntry{done: make(chan struct{})}
			c.entries[key] = e
		}
		c.mu.Unlock()

		if !found {
			c.fill(ctx, key, e, func(ctx context.Context) (any, error) { return fetch(ctx) })
		} else {
			select {
			case <-e.done:
			case <-ctx.Done():
				return zero, ctx.Err()
			}
			if e.err != nil && isContextError(e.err) && ctx.Err() == nil {
				continue // the fetching caller's deadline, not ours: fetch again
			}
		}
		if e.err != nil {
			return zero, e.err
		}
		return clone(e.val.(T)), nil
	}
}

// fill runs fetch for e and publishes the result, even if fetch panics, so
// that waiters are never stranded.
func (c *Cache) fill(ctx context.Context, key cacheKey, e *cacheEntry, fetch func(context.Context) (any, error)) {
	defer func() {
		if r := recover(); r != nil {
			e.err = fmt.Errorf("read %s panicked: %v", key.op, r)
		}
		if e.err != nil && (isContextError(e.err) || ctx.Err() != nil) {
			if !isContextError(e.err) {
				// A transport error while the caller's context was ending
				// (a cut stream, a closed port-forward) is the deadline's
				// doing too; mark it so that waiters fetch again.
				e.err = fmt.Errorf("%w (%w)", e.err, ctx.Err())
			}
			c.mu.Lock()
			if c.entries[key] == e {
				delete(c.entries, key)
			}
			c.mu.Unlock()
		}
		close(e.done)
	}()
	e.val, e.err = fetch(ctx)
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (c *Cache) ServerVersion(ctx context.Context) (string, error) {
	return read(ctx, c, cacheKey{op: "version"}, c.c.ServerVersion, same[string])
}

func (c *Cache) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return read(ctx, c, cacheKey{op: "namespace", name: name},
		func(ctx context.Context) (*corev1.Namespace, error) { return c.c.GetNamespace(ctx, name) },
		(*corev1.Namespace).DeepCopy)
}

func (c *Cache) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return read(ctx, c, cacheKey{op: "service", namespace: namespace, name: name},
		func(ctx context.Context) (*corev1.Service, error) { return c.c.GetService(ctx, namespace, name) },
		(*corev1.Service).DeepCopy)
}

func (c *Cache) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return read(ctx, c, cacheKey{op: "pod", namespace: namespace, name: name},
		func(ctx context.Context) (*corev1.Pod, error) { return c.c.GetPod(ctx, namespace, name) },
		(*corev1.Pod).DeepCopy)
}

func (c *Cache) ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	// The selector's canonical string (sorted) is the key; the fetch gets
	// its own copy of the map in case the caller reuses it.
	sel := labels.Set(selector).String()
	owned := make(map[string]string, len(selector))
	for k, v := range selector {
		owned[k] = v
	}
	if selector == nil {
		owned = nil
	}
	return read(ctx, c, cacheKey{op: "pods", namespace: namespace, name: sel},
		func(ctx context.Context) ([]corev1.Pod, error) { return c.c.ListPods(ctx, namespace, owned) },
		cloneValues[corev1.Pod])
}

func (c *Cache) EndpointSlices(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	return read(ctx, c, cacheKey{op: "endpointslices", namespace: namespace, name: service},
		func(ctx context.Context) ([]discoveryv1.EndpointSlice, error) {
			return c.c.EndpointSlices(ctx, namespace, service)
		},
		cloneValues[discoveryv1.EndpointSlice])
}

func (c *Cache) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return read(ctx, c, cacheKey{op: "configmap", namespace: namespace, name: name},
		func(ctx context.Context) (*corev1.ConfigMap, error) { return c.c.GetConfigMap(ctx, namespace, name) },
		(*corev1.ConfigMap).DeepCopy)
}

func (c *Cache) DestinationRules(ctx context.Context, namespace string) ([]*networkingv1.DestinationRule, error) {
	return read(ctx, c, cacheKey{op: "destinationrules", namespace: namespace},
		func(ctx context.Context) ([]*networkingv1.DestinationRule, error) {
			return c.c.DestinationRules(ctx, namespace)
		},
		clonePointers[networkingv1.DestinationRule])
}

func (c *Cache) VirtualServices(ctx context.Context, namespace string) ([]*networkingv1.VirtualService, error) {
	return read(ctx, c, cacheKey{op: "virtualservices", namespace: namespace},
		func(ctx context.Context) ([]*networkingv1.VirtualService, error) {
			return c.c.VirtualServices(ctx, namespace)
		},
		clonePointers[networkingv1.VirtualService])
}

func (c *Cache) ServiceEntries(ctx context.Context, namespace string) ([]*networkingv1.ServiceEntry, error) {
	return read(ctx, c, cacheKey{op: "serviceentries", namespace: namespace},
		func(ctx context.Context) ([]*networkingv1.ServiceEntry, error) {
			return c.c.ServiceEntries(ctx, namespace)
		},
		clonePointers[networkingv1.ServiceEntry])
}

func (c *Cache) Sidecars(ctx context.Context, namespace string) ([]*networkingv1.Sidecar, error) {
	return read(ctx, c, cacheKey{op: "sidecars", namespace: namespace},
		func(ctx context.Context) ([]*networkingv1.Sidecar, error) { return c.c.Sidecars(ctx, namespace) },
		clonePointers[networkingv1.Sidecar])
}

func (c *Cache) PeerAuthentications(ctx context.Context, namespace string) ([]*securityv1.PeerAuthentication, error) {
	return read(ctx, c, cacheKey{op: "peerauthentications", namespace: namespace},
		func(ctx context.Context) ([]*securityv1.PeerAuthentication, error) {
			return c.c.PeerAuthentications(ctx, namespace)
		},
		clonePointers[securityv1.PeerAuthentication])
}

func (c *Cache) EnvoyAdmin(ctx context.Context, pod PodRef, path string) ([]byte, error) {
	return read(ctx, c, cacheKey{op: "envoy", namespace: pod.Namespace, name: pod.Name, path: path},
		func(ctx context.Context) ([]byte, error) { return c.c.EnvoyAdmin(ctx, pod, path) },
		cloneBytes)
}

func (c *Cache) Logs(ctx context.Context, pod PodRef, opts LogOptions) ([]byte, error) {
	return read(ctx, c, cacheKey{op: "logs", namespace: pod.Namespace, name: pod.Name, logs: opts},
		func(ctx context.Context) ([]byte, error) { return c.c.Logs(ctx, pod, opts) },
		cloneBytes)
}

func (c *Cache) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	return read(ctx, c, cacheKey{op: "istiod", name: replica, path: path},
		func(ctx context.Context) ([]byte, error) { return c.c.Istiod(ctx, replica, path) },
		cloneBytes)
}

func same[T any](v T) T { return v }

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// deepCopier is a generated Kubernetes or Istio object type.
type deepCopier[T any] interface {
	*T
	DeepCopyInto(*T)
}

// cloneValues deep-copies a list of objects held by value ([]corev1.Pod).
func cloneValues[T any, P deepCopier[T]](in []T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		P(&in[i]).DeepCopyInto(&out[i])
	}
	return out
}

// clonePointers deep-copies a list of objects held by pointer (the Istio
// clientset's lists).
func clonePointers[T any, P deepCopier[T]](in []*T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, v := range in {
		if v == nil {
			continue
		}
		cp := new(T)
		P(v).DeepCopyInto(cp)
		out[i] = cp
	}
	return out
}

// GetNode reads through when the cached cluster can read nodes.
func (c *Cache) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return read(ctx, c, cacheKey{op: "node", name: name},
		func(ctx context.Context) (*corev1.Node, error) { return GetNode(ctx, c.c, name) },
		(*corev1.Node).DeepCopy)
}

// PodsByIP reads through when the cached cluster can search pods by IP.
func (c *Cache) PodsByIP(ctx context.Context, ip string) ([]corev1.Pod, error) {
	return read(ctx, c, cacheKey{op: "pods-by-ip", name: ip},
		func(ctx context.Context) ([]corev1.Pod, error) { return PodsByIP(ctx, c.c, ip) },
		cloneValues[corev1.Pod])
}

// NetworkGatewayServices reads through when the cached cluster can list
// them.
func (c *Cache) NetworkGatewayServices(ctx context.Context) ([]corev1.Service, error) {
	return read(ctx, c, cacheKey{op: "network-gateway-services"},
		func(ctx context.Context) ([]corev1.Service, error) { return NetworkGatewayServices(ctx, c.c) },
		cloneValues[corev1.Service])
}

// Netstat reads through when the cached cluster holds pods' netstat.
func (c *Cache) Netstat(ctx context.Context, pod PodRef) ([]byte, error) {
	return read(ctx, c, cacheKey{op: "netstat", namespace: pod.Namespace, name: pod.Name},
		func(ctx context.Context) ([]byte, error) { return Netstat(ctx, c.c, pod) },
		cloneBytes)
}

// PodsWithIP reads through when the cached cluster can search a
// namespace's pods by IP.
func (c *Cache) PodsWithIP(ctx context.Context, namespace, ip string) ([]corev1.Pod, error) {
	return read(ctx, c, cacheKey{op: "pods-with-ip", namespace: namespace, name: ip},
		func(ctx context.Context) ([]corev1.Pod, error) { return PodsWithIP(ctx, c.c, namespace, ip) },
		cloneValues[corev1.Pod])
}
