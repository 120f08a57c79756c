// Package mesh is Istio's semantics, modelled once: what a pod is to the
// mesh (sidecar or not, injection), the mesh config with the defaults Istio
// applies, and which rules are visible where. Everything here is a pure
// function over Kubernetes and Istio objects: no I/O, so the probes, the
// recorded cluster and the live client all read the mesh the same way.
package mesh
