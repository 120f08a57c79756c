// Package manifests reads Kubernetes and Istio objects from YAML and JSON
// documents as users have them (`kubectl get -o yaml`, a repository of
// manifests): typed with client-go's and Istio's schemes, Istio's older API
// versions read as v1, the version the probes list.
package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the decoder Istio's types use
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/runtime/protoiface"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	networkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	securityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"
)

// Scheme knows every Kubernetes kind client-go does, every Istio kind and
// every Gateway API kind of the versions users' dumps carry (v1, v1beta1,
// v1alpha2, v1alpha3): a dump of a cluster with Gateway API routes must
// decode, even though a triage reads only its Gateways (see Read).
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, istioscheme.AddToScheme,
		gatewayv1.Install, gatewayv1beta1.Install, gatewayv1alpha2.Install, gatewayv1alpha3.Install,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// Read reports whether a triage reads objects of kind gvk, so that a
// source loads them: every Kubernetes kind client-go knows and every Istio
// kind (the clientsets a recording replays through hold them), and the
// Gateway API kinds istiod turns into its configuration (Gateways,
// GatewayClasses, HTTPRoutes, GRPCRoutes, TLSRoutes, TCPRoutes,
// ReferenceGrants). Other Gateway API kinds (UDPRoute, ListenerSet,
// BackendTLSPolicy...) decode but are not read: Load skips them, naming
// each kind once.
func Read(gvk schema.GroupVersionKind) bool {
	if gvk.Group == gatewayv1.GroupName {
		return gatewayAPIRead[gvk.Kind]
	}
	return clientgoscheme.Scheme.Recognizes(gvk) || istioscheme.Scheme.Recognizes(gvk)
}

// gatewayAPIRead are the Gateway API kinds a triage reads.
var gatewayAPIRead = map[string]bool{
	"Gateway": true, "GatewayClass": true, "HTTPRoute": true, "GRPCRoute": true,
	"TLSRoute": true, "TCPRoute": true, "ReferenceGrant": true,
}

var (
	lenientDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, Scheme, Scheme, kjson.SerializerOptions{Yaml: true})
	strictDecoder  = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, Scheme, Scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
)

// UnknownKindError lists documents whose kind neither Kubernetes nor Istio
// defines, so a manifest set is never half-read without saying so.
type UnknownKindError struct {
	Documents []string // "file.yaml document 3: example.com/v1 Widget"
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("%d document(s) of unknown kind: %s", len(e.Documents), strings.Join(e.Documents, "; "))
}

// Skipped is a document (or an item of a List) that was not read, and why.
type Skipped struct {
	// Where is the file and document index: "dump.yaml document 3", or
	// "dump.yaml document 1 item 4" inside a List.
	Where string
	// Kind is "apiVersion Kind" when the document said, else "".
	Kind string
	// Reason says why: a kind meshtriage does not read, a parse error.
	Reason string
	// Documents counts the documents of one kind folded into this entry
	// (Set names each skipped kind once); 0 or 1: the one named by Where.
	Documents int
}

func (s Skipped) String() string {
	if s.Kind != "" {
		return fmt.Sprintf("%s (%s): %s", s.Where, s.Kind, s.Reason)
	}
	return s.Where + ": " + s.Reason
}

// ReasonUnknownKind is the Reason of a document whose kind neither
// Kubernetes nor Istio defines.
const ReasonUnknownKind = "not a Kubernetes or Istio kind meshtriage reads"

// ReasonNotRead is the Reason of a document of a kind the schemes know but
// a triage does not read (a Gateway API HTTPRoute): skipped, not an error.
const ReasonNotRead = "a kind meshtriage does not read"

// Decode decodes every document of one file; documents of unknown kind come
// back together as an *UnknownKindError after the rest decoded, and any
// other document that does not decode is an error. strict refuses fields
// the schemes do not know (for data this project writes); real dumps from
// newer clusters need it off. Inputs as users have them go through Load or
// a Reader instead, which skip what they cannot read.
func Decode(file string, data []byte, strict bool) ([]runtime.Object, error) {
	d := &decoder{strict: strict}
	if err := d.file(file, data); err != nil {
		return nil, err
	}
	if len(d.skipped) > 0 {
		unknown := &UnknownKindError{}
		for _, s := range d.skipped {
			unknown.Documents = append(unknown.Documents, s.Where+": "+s.Kind)
		}
		return d.objects, unknown
	}
	return d.objects, nil
}

// decoder collects the objects of documents and what it skipped.
type decoder struct {
	strict  bool // refuse unknown fields (scenarios this project writes)
	lenient bool // a document that does not decode is skipped, not an error
	objects []runtime.Object
	where   []string // where[i] is the document objects[i] came from
	skipped []Skipped
}

// file splits data into documents: YAML separated by "---", or a stream of
// JSON values (`kubectl get -o json` writes one; concatenated ones are read
// in turn).
func (d *decoder) file(file string, data []byte) error {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for doc := 1; ; doc++ {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				return nil
			}
			where := fmt.Sprintf("%s document %d", file, doc)
			if err != nil {
				// A JSON stream cannot be resynchronised after a syntax
				// error: the rest of the file is one unreadable document.
				return d.fail(where, "", fmt.Errorf("does not parse as JSON: %w", err))
			}
			if err := d.document(where, raw); err != nil {
				return err
			}
		}
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return d.fail(fmt.Sprintf("%s document %d", file, doc), "", err)
		}
		if isBlank(raw) {
			doc--
			continue
		}
		if err := d.document(fmt.Sprintf("%s document %d", file, doc), raw); err != nil {
			return err
		}
	}
}

// fail records a document that did not decode: skipped when lenient, else
// the error that stops the file.
func (d *decoder) fail(where, kind string, err error) error {
	if d.lenient {
		d.skipped = append(d.skipped, Skipped{Where: where, Kind: kind, Reason: oneLine(err.Error())})
		return nil
	}
	if kind != "" {
		return fmt.Errorf("%s (%s): %w", where, kind, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

func (d *decoder) document(where string, raw []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return d.fail(where, "", fmt.Errorf("does not parse: %w", err))
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return d.fail(where, "", errors.New("no apiVersion/kind"))
	}
	kind := tm.APIVersion + " " + tm.Kind
	if strings.HasSuffix(tm.Kind, "List") {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(raw, &list); err != nil {
			return d.fail(where, kind, fmt.Errorf("does not parse: %w", err))
		}
		if list.Items != nil || tm.Kind == "List" {
			// A typed list read from the API (PodList) leaves its items'
			// apiVersion and kind out: they are the list's.
			itemKind := strings.TrimSuffix(tm.Kind, "List")
			for i, item := range list.Items {
				if tm.Kind != "List" {
					item = withTypeMeta(item, tm.APIVersion, itemKind)
				}
				if err := d.document(fmt.Sprintf("%s item %d", where, i+1), item); err != nil {
					return err
				}
			}
			return nil
		}
	}
	dec := lenientDecoder
	if d.strict {
		dec = strictDecoder
	}
	obj, _, err := dec.Decode(raw, nil, nil)
	if runtime.IsNotRegisteredError(err) {
		d.skipped = append(d.skipped, Skipped{Where: where, Kind: kind, Reason: ReasonUnknownKind})
		return nil
	}
	if err != nil {
		return d.fail(where, kind, err)
	}
	if d.strict {
		if err := checkIstioSpec(obj, raw); err != nil {
			return d.fail(where, kind, err)
		}
	}
	d.objects = append(d.objects, toServedVersion(obj))
	d.where = append(d.where, where)
	return nil
}

// withTypeMeta sets apiVersion and kind on a JSON object that lacks them.
func withTypeMeta(item json.RawMessage, apiVersion, kind string) json.RawMessage {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(item, &fields); err != nil {
		return item // the decoder will say what is wrong with it
	}
	if _, ok := fields["kind"]; !ok {
		fields["kind"], _ = json.Marshal(kind)
	}
	if _, ok := fields["apiVersion"]; !ok {
		fields["apiVersion"], _ = json.Marshal(apiVersion)
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return item
	}
	return out
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func isBlank(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// checkIstioSpec re-reads an Istio spec with the JSON decoder the Istio
// types use (golang/protobuf jsonpb: it takes durations such as "3m", as
// kubectl apply and istiod do) but refusing unknown fields, which the types'
// own decoding drops: a misspelt "consecutive5xxError" in a recorded
// scenario would silently change what it demonstrates.
func checkIstioSpec(obj runtime.Object, raw []byte) error {
	var spec proto.Message
	switch o := obj.(type) {
	case *networkingv1.DestinationRule:
		spec = &o.Spec
	case *networkingv1.VirtualService:
		spec = &o.Spec
	case *networkingv1.ServiceEntry:
		spec = &o.Spec
	case *networkingv1.Sidecar:
		spec = &o.Spec
	case *networkingv1.Gateway:
		spec = &o.Spec
	case *securityv1.PeerAuthentication:
		spec = &o.Spec
	default:
		return nil
	}
	var doc struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if len(doc.Spec) == 0 {
		return nil
	}
	fresh, ok := spec.ProtoReflect().New().Interface().(protoiface.MessageV1)
	if !ok {
		return fmt.Errorf("spec type %T is not a protobuf message", spec)
	}
	if err := (&jsonpb.Unmarshaler{}).Unmarshal(bytes.NewReader(doc.Spec), fresh); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

// toServedVersion converts older Istio API versions to the v1 the probes
// read; the specs are the same messages.
func toServedVersion(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *networkingv1beta1.DestinationRule:
		out := &networkingv1.DestinationRule{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("DestinationRule")
		return out
	case *networkingv1alpha3.DestinationRule:
		out := &networkingv1.DestinationRule{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("DestinationRule")
		return out
	case *networkingv1beta1.VirtualService:
		out := &networkingv1.VirtualService{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("VirtualService")
		return out
	case *networkingv1alpha3.VirtualService:
		out := &networkingv1.VirtualService{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("VirtualService")
		return out
	case *networkingv1beta1.ServiceEntry:
		out := &networkingv1.ServiceEntry{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("ServiceEntry")
		return out
	case *networkingv1alpha3.ServiceEntry:
		out := &networkingv1.ServiceEntry{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("ServiceEntry")
		return out
	case *networkingv1beta1.Sidecar:
		out := &networkingv1.Sidecar{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("Sidecar")
		return out
	case *networkingv1alpha3.Sidecar:
		out := &networkingv1.Sidecar{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("Sidecar")
		return out
	case *networkingv1beta1.Gateway:
		out := &networkingv1.Gateway{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("Gateway")
		return out
	case *networkingv1alpha3.Gateway:
		out := &networkingv1.Gateway{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("Gateway")
		return out
	case *gatewayv1beta1.Gateway:
		// The same type as v1's (gateway-api defines it so).
		out := (*gatewayv1.Gateway)(o).DeepCopy()
		out.TypeMeta = gatewayV1Type("Gateway")
		return out
	case *gatewayv1beta1.GatewayClass:
		out := (*gatewayv1.GatewayClass)(o).DeepCopy()
		out.TypeMeta = gatewayV1Type("GatewayClass")
		return out
	case *gatewayv1beta1.HTTPRoute:
		out := (*gatewayv1.HTTPRoute)(o).DeepCopy()
		out.TypeMeta = gatewayV1Type("HTTPRoute")
		return out
	case *gatewayv1beta1.ReferenceGrant:
		out := (*gatewayv1.ReferenceGrant)(o).DeepCopy()
		out.TypeMeta = gatewayV1Type("ReferenceGrant")
		return out
	case *gatewayv1alpha2.ReferenceGrant:
		out := (*gatewayv1.ReferenceGrant)(o).DeepCopy()
		out.TypeMeta = gatewayV1Type("ReferenceGrant")
		return out
	case *gatewayv1alpha2.GRPCRoute:
		out := (*gatewayv1.GRPCRoute)(o).DeepCopy()
		out.TypeMeta = gatewayV1Type("GRPCRoute")
		return out
	case *gatewayv1alpha3.TLSRoute:
		out := (*gatewayv1.TLSRoute)(o).DeepCopy()
		out.TypeMeta = gatewayV1Type("TLSRoute")
		return out
	case *gatewayv1alpha2.TLSRoute:
		// A struct of its own, whose fields v1 keeps: converted field by
		// field through JSON.
		return viaJSON(o, &gatewayv1.TLSRoute{TypeMeta: gatewayV1Type("TLSRoute")})
	case *gatewayv1alpha2.TCPRoute:
		return viaJSON(o, &gatewayv1.TCPRoute{TypeMeta: gatewayV1Type("TCPRoute")})
	case *securityv1beta1.PeerAuthentication:
		out := &securityv1.PeerAuthentication{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = metav1.TypeMeta{APIVersion: securityv1.SchemeGroupVersion.String(), Kind: "PeerAuthentication"}
		return out
	}
	return obj
}

// gatewayV1Type is the TypeMeta of a Gateway API v1 kind.
func gatewayV1Type(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: kind}
}

// viaJSON converts obj into out (a newer version of its kind with the
// same fields) through its JSON; obj as it is when that fails.
func viaJSON[T runtime.Object](obj runtime.Object, out T) runtime.Object {
	tm := out.GetObjectKind().GroupVersionKind()
	data, err := json.Marshal(obj)
	if err != nil || json.Unmarshal(data, out) != nil {
		return obj
	}
	out.GetObjectKind().SetGroupVersionKind(tm)
	return out
}

func v1Type(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: kind}
}
