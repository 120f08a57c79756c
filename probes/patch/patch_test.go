package patch_test

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/meshtriage/meshtriage/probes/patch"
)

var vs = []byte(`{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"orders","namespace":"shop"},
"spec":{"hosts":["orders"],"http":[{"route":[{"destination":{"host":"orders","subset":"v1"},"weight":90},{"destination":{"host":"orders","subset":"v2"},"weight":10}]}]}}`)

var obj = patch.Object{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Namespace: "shop", Name: "orders"}

func TestJSONPatchAppliesAndItsTestsGuardIt(t *testing.T) {
	p, out, err := patch.JSONPatch(obj, vs,
		patch.Test("/spec/http/0/route/1/destination/subset", "v2"),
		patch.Add("/spec/http/0/route/0/weight", 100),
		patch.Remove("/spec/http/0/route/1"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			HTTP []struct {
				Route []struct {
					Weight int `json:"weight"`
				} `json:"route"`
			} `json:"http"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if r := doc.Spec.HTTP[0].Route; len(r) != 1 || r[0].Weight != 100 {
		t.Fatalf("routes after the patch: %+v", r)
	}
	if p.Type != patch.JSON || !strings.Contains(string(p.Patch), `"op":"remove","path":"/spec/http/0/route/1"}`) {
		t.Fatalf("patch %s", p.Patch)
	}
	// A remove carries no value, a test of 0 does.
	if strings.Contains(string(p.Patch), `"remove","path":"/spec/http/0/route/1","value"`) {
		t.Errorf("remove with a value: %s", p.Patch)
	}
	if _, _, err := patch.JSONPatch(obj, vs, patch.Test("/spec/http/0/route/1/destination/subset", "canary")); err == nil {
		t.Error("a test that does not hold applied")
	}
	zero, _, err := patch.JSONPatch(obj, vs, patch.Add("/spec/http/0/route/1/weight", 0))
	if err != nil || !strings.Contains(string(zero.Patch), `"value":0`) {
		t.Errorf("a value of 0 was dropped: %s %v", zero.Patch, err)
	}
}

func TestMergePatchIsTheDifferenceAndRefusesLists(t *testing.T) {
	dr := []byte(`{"spec":{"host":"orders","trafficPolicy":{"outlierDetection":{"consecutive5xxErrors":1,"interval":"5s","maxEjectionPercent":100}}}}`)
	mod := []byte(`{"spec":{"host":"orders","trafficPolicy":{"outlierDetection":{"consecutive5xxErrors":5,"interval":"5s"}}}}`)
	p, err := patch.MergePatch(obj, dr, mod)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(p.Patch), `{"spec":{"trafficPolicy":{"outlierDetection":{"consecutive5xxErrors":5,"maxEjectionPercent":null}}}}`; got != want {
		t.Errorf("merge patch = %s, want %s", got, want)
	}
	back, err := patch.Apply(dr, p, nil)
	if err != nil || !strings.Contains(string(back), `"consecutive5xxErrors":5`) || strings.Contains(string(back), "maxEjectionPercent") {
		t.Errorf("applied: %s %v", back, err)
	}
	mod2 := []byte(`{"spec":{"hosts":["a","b"]}}`)
	if _, err := patch.MergePatch(obj, []byte(`{"spec":{"hosts":["a"]}}`), mod2); err == nil {
		t.Error("a merge patch that replaces a list was made")
	}
}

func TestStrategicPatchMergesContainersByName(t *testing.T) {
	dep := []byte(`{"spec":{"template":{"metadata":{"annotations":{"a":"1"}},"spec":{"containers":[{"name":"app","image":"x"},{"name":"side","image":"y"}]}}}}`)
	p := patch.Patch{Kind: "Deployment", Name: "orders", Type: patch.Strategic, Patch: []byte(`{"spec":{"template":{"metadata":{"annotations":{"b":"2"}},"spec":{"containers":[{"name":"app","image":"z"}]}}}}`)}
	out, err := patch.Apply(dep, p, &appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"a":"1"`, `"b":"2"`, `"image":"z"`, `"name":"side"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("strategic merge lost %s: %s", want, out)
		}
	}
}

func TestCommands(t *testing.T) {
	p := patch.Patch{APIVersion: "networking.istio.io/v1", Kind: "Gateway", Namespace: "istio-system", Name: "public", Type: patch.Merge, Patch: []byte(`{"metadata": {"labels": {"x": "it's"}}}`)}
	if got, want := p.Command(), `kubectl patch gateway.networking.istio.io public -n istio-system --type=merge -p '{"metadata":{"labels":{"x":"it'\''s"}}}'`; got != want {
		t.Errorf("command = %s\nwant      %s", got, want)
	}
	ns := patch.Patch{APIVersion: "v1", Kind: "Namespace", Name: "shop", Type: patch.Merge, Patch: []byte(`{}`)}
	if got := ns.Command(); got != `kubectl patch namespace shop --type=merge -p '{}'` {
		t.Errorf("cluster-scoped: %s", got)
	}
	// An object of a --remote-contexts cluster is patched there.
	remote := patch.Patch{APIVersion: "v1", Kind: "Namespace", Name: "istio-system", Context: "c2", Type: patch.Merge, Patch: []byte(`{}`)}
	if got := remote.Command(); got != `kubectl patch namespace istio-system --context c2 --type=merge -p '{}'` {
		t.Errorf("remote: %s", got)
	}
	if got := remote.Object(); got != "Namespace istio-system (context c2)" {
		t.Errorf("remote object: %s", got)
	}
	c := patch.Patch{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: "shop", Name: "waypoint", Type: patch.Create,
		Patch: []byte(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"waypoint","namespace":"shop"}}`)}
	want := "kubectl apply -n shop -f - <<'EOF'\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: waypoint\n  namespace: shop\nEOF"
	if got := c.Command(); got != want {
		t.Errorf("create:\n%s\nwant\n%s", got, want)
	}
	if _, err := patch.Apply(nil, c, nil); err == nil {
		t.Error("a create applied to an object")
	}
	if got := patch.Pointer("metadata", "labels", "istio.io/use-waypoint"); got != "/metadata/labels/istio.io~1use-waypoint" {
		t.Errorf("pointer %s", got)
	}
}
