package mesh_test

import (
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

func TestModel(t *testing.T) {
	for _, tc := range meshtest.Cases {
		name := strings.TrimSuffix(tc.File, ".yaml") + "/" + tc.Caller
		if tc.Mesh != "" {
			name += "/" + tc.Mesh
		}
		t.Run(name, func(t *testing.T) {
			objs := meshtest.Objects(t, "testdata/model", tc.Files()...)
			c := mesh.ConfigFromObjects(objs, meshtest.MeshConfig(t, tc.Mesh), "istio-system")
			v, err := c.ViewFor(meshtest.CallerFrom(t, objs, c, tc.Caller), tc.Host, tc.Port)
			if err != nil {
				t.Fatal(err)
			}
			tc.Check(t, v)
			if t.Failed() {
				t.Logf("chain:\n%s", strings.Join(v.Chain(), "\n"))
			}
		})
	}
}
