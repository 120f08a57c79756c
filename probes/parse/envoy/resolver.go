package envoy

import (
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	// Linked so that the transport sockets and protocol options a probe
	// reads resolve to their real types instead of the empty fallback.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// TolerantResolver resolves Any type URLs from protoregistry.GlobalTypes and
// stands in google.protobuf.Empty for every type it cannot find, so that a
// config_dump carrying Istio's own extensions (metadata exchange, stats,
// peer metadata) or Envoy types go-control-plane does not link in
// (InternalUpstreamTransport) still decodes. With DiscardUnknown the fields
// of such a message are skipped; the Any keeps its type URL and an empty
// value, so a reader can still see which extension was configured.
type TolerantResolver struct {
	// Fallbacks, when not nil, collects the type URLs that fell back.
	Fallbacks map[string]int
}

var _ interface {
	protoregistry.MessageTypeResolver
	protoregistry.ExtensionTypeResolver
} = (*TolerantResolver)(nil)

var emptyType = (&emptypb.Empty{}).ProtoReflect().Type()

func (r *TolerantResolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(name); err == nil {
		return mt, nil
	}
	r.fellBack(string(name))
	return emptyType, nil
}

func (r *TolerantResolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	r.fellBack(url)
	return emptyType, nil
}

func (r *TolerantResolver) FindExtensionByName(field protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(field)
}

func (r *TolerantResolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}

func (r *TolerantResolver) fellBack(url string) {
	if r.Fallbacks == nil {
		return
	}
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		url = url[i+1:]
	}
	r.Fallbacks[url]++
}

// tolerant is the protojson configuration every parser here uses.
func tolerant(r *TolerantResolver) protojson.UnmarshalOptions {
	if r == nil {
		r = &TolerantResolver{}
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true, Resolver: r}
}

// countEmptyAnys counts, by type name, the Any values under m whose type
// this build cannot resolve: the ones TolerantResolver stood in for.
func countEmptyAnys(m protoreflect.Message, counts map[string]int) {
	if m.Descriptor().FullName() == anyFullName {
		url := m.Get(m.Descriptor().Fields().ByName("type_url")).String()
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
		if err != nil {
			counts[shortType(url)]++
			return
		}
		inner := mt.New()
		if proto.Unmarshal(m.Get(m.Descriptor().Fields().ByName("value")).Bytes(), inner.Interface()) == nil {
			countEmptyAnys(inner, counts)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					countEmptyAnys(mv.Message(), counts)
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				l := v.List()
				for i := 0; i < l.Len(); i++ {
					countEmptyAnys(l.Get(i).Message(), counts)
				}
			}
		case fd.Message() != nil:
			countEmptyAnys(v.Message(), counts)
		}
		return true
	})
}

var anyFullName = (&anypb.Any{}).ProtoReflect().Descriptor().FullName()
