package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// crdGVR is apiextensions' CRD resource. The apiextensions clientset is not a
// dependency of the project, so CRDs go through the dynamic client.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// IstioCRDFile finds kubernetes/customresourcedefinitions.gen.yaml of the
// istio.io/api version the project builds with.
func IstioCRDFile(ctx context.Context) (string, error) {
	const rel = "kubernetes/customresourcedefinitions.gen.yaml"
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "istio.io/api").Output()
	if err == nil {
		if dir := strings.TrimSpace(string(out)); dir != "" {
			return filepath.Join(dir, rel), nil
		}
	}
	// Outside the module (a built meshlab binary): the module cache entry of
	// the version linked into this binary.
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "istio.io/api" {
				modcache, merr := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
				if merr == nil {
					return filepath.Join(strings.TrimSpace(string(modcache)), "istio.io", "api@"+dep.Version, rel), nil
				}
			}
		}
	}
	return "", fmt.Errorf("cannot locate the istio.io/api module (go list -m istio.io/api: %v)", err)
}

// ReadCRDs decodes a multi-document CRD manifest.
func ReadCRDs(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("unexpected %s %q in a CRD manifest", u.GetKind(), u.GetName())
		}
		out = append(out, u)
	}
}

// ApplyIstioCRDs creates the Istio CRDs (leaving existing ones alone) and
// waits until every kind they define is served.
func ApplyIstioCRDs(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface) error {
	path, err := IstioCRDFile(ctx)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crds, err := ReadCRDs(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return ApplyCRDs(ctx, dyn, disc, crds)
}

// ApplyCRDs creates crds and waits for them to be Established and for each
// served version's resource to appear in discovery.
func ApplyCRDs(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		_, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if served, _ := vm["served"].(bool); !served {
				continue
			}
			name, _ := vm["name"].(string)
			if err := waitServed(ctx, disc, group+"/"+name, plural); err != nil {
				return fmt.Errorf("CRD %s: %w", crd.GetName(), err)
			}
		}
	}
	return nil
}

func waitServed(ctx context.Context, disc discovery.DiscoveryInterface, groupVersion, plural string) error {
	for {
		list, err := disc.ServerResourcesForGroupVersion(groupVersion)
		if err == nil {
			for _, r := range list.APIResources {
				if r.Name == plural {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s not served: %w", groupVersion, plural, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
