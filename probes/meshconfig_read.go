package probes

import (
	"context"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ReadMeshConfig fetches and parses the mesh config. An absent ConfigMap is
// not an error (Istio then runs on defaults); an unreadable one is.
func ReadMeshConfig(ctx context.Context, c cluster.Cluster) (mesh.MeshConfig, error) {
	ns := c.Info().ControlPlaneNamespace
	if ns == "" {
		ns = cluster.DefaultControlPlane
	}
	cm, err := c.GetConfigMap(ctx, ns, mesh.MeshConfigMap)
	if apierrors.IsNotFound(err) {
		return mesh.MeshConfig{}, nil
	}
	if err != nil {
		return mesh.MeshConfig{}, err
	}
	mc, err := mesh.ParseMeshConfig(cm.Data["mesh"])
	if err != nil {
		return mesh.MeshConfig{}, err
	}
	return mesh.MeshConfig{Raw: mc, Found: true}, nil
}
