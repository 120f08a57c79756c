package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// The xDS type URLs a sidecar's ADS stream carries.
const (
	ClusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	ListenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// XDSClient is an Envoy's ADS stream to istiod, as a sidecar opens it on the
// plaintext xDS port (state of the world, one gRPC stream for every type):
// it asks for every cluster, then for the endpoints of the EDS clusters,
// then (once those arrived, as Envoy's cluster manager finishes warming)
// for every listener, then for the routes the listeners' HTTP connection
// managers name. It ACKs each response it applies and NACKs one it cannot
// decode, keeping what it had.
//
// SetACK(false) turns it into a stuck proxy: responses still arrive but
// are neither applied nor acknowledged, so istiod's syncz shows the types
// it pushed since as STALE; SetACK(true) applies and ACKs the newest of
// them, as a proxy that got unstuck would.
//
// SetReject(type, reason) turns it into a proxy that cannot take istiod's
// config of that type (an Envoy older than the config's extensions): each
// response of the type is NACKed with reason as the error detail, as Envoy
// NACKs an update it cannot apply, keeping what it had; SetReject(type,
// "") accepts again from the next response.
type XDSClient struct {
	Node *corev3.Node

	conn   *grpc.ClientConn
	stream grpc.BidiStreamingClient[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]
	cancel context.CancelFunc
	sendMu sync.Mutex
	done   chan struct{}

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every state change
	ack      bool
	nodeSent bool
	types    map[string]*XDSTypeState
	// pending holds the newest response of each type received while not
	// acking.
	pending map[string]*discoveryv3.DiscoveryResponse
	// reject holds, by type, the error detail the client NACKs every
	// response of the type with.
	reject       map[string]string
	ldsStarted   bool
	streamErr    error
	connectedAt  time.Time
	lastReceived time.Time
}

// XDSTypeState is what the client holds of one xDS type.
type XDSTypeState struct {
	// Version and Nonce are of the last applied response: what the next
	// request of this type carries.
	Version, Nonce string
	// Names are the subscribed resource names (EDS, RDS; CDS and LDS are
	// wildcard subscriptions).
	Names     []string
	Resources map[string]*XDSResource
	// Received counts responses, Applied the ACKed ones, Rejected the
	// NACKed ones; Ignored counts those that arrived while not acking.
	Received, Applied, Rejected, Ignored int
	LastError                            string
}

// XDSResource is one resource as last applied.
type XDSResource struct {
	Name    string
	Version string // version_info of the response it came in
	Any     *anypb.Any
	Message proto.Message
	Updated time.Time
}

// ConnectXDS opens an ADS stream to istiod's plaintext xDS address as node
// and sends the first request (every cluster). ctx bounds the connecting;
// the stream lives until Close, as a sidecar's lives as long as its pod.
func ConnectXDS(ctx context.Context, addr string, node *corev3.Node) (*XDSClient, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		// istiod's pushes for a big mesh exceed gRPC's 4 MB default, as
		// Envoy's own limit is far above it.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return nil, fmt.Errorf("xDS client for %s: %w", node.GetId(), err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx, grpc.WaitForReady(true))
	if !stop() {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		cancel()
		conn.Close()
		return nil, fmt.Errorf("ADS stream to %s: %w", addr, err)
	}
	c := &XDSClient{
		Node:        node,
		conn:        conn,
		stream:      stream,
		cancel:      cancel,
		done:        make(chan struct{}),
		changed:     make(chan struct{}),
		ack:         true,
		types:       map[string]*XDSTypeState{},
		pending:     map[string]*discoveryv3.DiscoveryResponse{},
		reject:      map[string]string{},
		connectedAt: time.Now(),
	}
	for _, t := range []string{ClusterType, EndpointType, ListenerType, RouteType} {
		c.types[t] = &XDSTypeState{Resources: map[string]*XDSResource{}}
	}
	if err := c.send([]*discoveryv3.DiscoveryRequest{c.requestLocked(ClusterType)}); err != nil {
		// Not Close: nothing receives yet to end the stream's goroutine.
		cancel()
		conn.Close()
		return nil, fmt.Errorf("ADS request to %s: %w", addr, err)
	}
	go c.receive()
	return c, nil
}

// Close ends the stream: istiod then forgets the proxy, as when its pod
// goes.
func (c *XDSClient) Close() {
	c.cancel()
	c.conn.Close()
	<-c.done
}

// Done is closed when the stream has ended; Err says why.
func (c *XDSClient) Done() <-chan struct{} { return c.done }

// Err is why the stream ended (nil while it runs).
func (c *XDSClient) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streamErr
}

// SetACK turns acknowledging on or off (see XDSClient). Turning it back on
// applies and ACKs the newest response of each type received meanwhile.
func (c *XDSClient) SetACK(on bool) error {
	c.mu.Lock()
	c.ack = on
	var reqs []*discoveryv3.DiscoveryRequest
	if on {
		for _, t := range []string{ClusterType, EndpointType, ListenerType, RouteType} {
			if resp := c.pending[t]; resp != nil {
				delete(c.pending, t)
				reqs = append(reqs, c.applyLocked(resp)...)
			}
		}
	}
	c.notifyLocked()
	c.mu.Unlock()
	return c.send(reqs)
}

// SetReject makes the client NACK every response of typeURL with reason
// as the error detail ("" accepts again).
func (c *XDSClient) SetReject(typeURL, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reason == "" {
		delete(c.reject, typeURL)
	} else {
		c.reject[typeURL] = reason
	}
	c.notifyLocked()
}

// TypeState returns a copy of what the client holds of typeURL.
func (c *XDSClient) TypeState(typeURL string) XDSTypeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := *c.types[typeURL]
	st.Names = slices.Clone(st.Names)
	st.Resources = make(map[string]*XDSResource, len(c.types[typeURL].Resources))
	for k, v := range c.types[typeURL].Resources {
		st.Resources[k] = v
	}
	return st
}

// WaitFor waits until cond holds over the client's state, the stream ends
// or ctx is done. cond runs with the state locked and must not call the
// client.
func (c *XDSClient) WaitFor(ctx context.Context, what string, cond func(types map[string]*XDSTypeState) bool) error {
	for {
		c.mu.Lock()
		ok := cond(c.types)
		changed, streamErr := c.changed, c.streamErr
		c.mu.Unlock()
		if ok {
			return nil
		}
		if streamErr != nil {
			return fmt.Errorf("xDS client %s: waiting for %s: stream ended: %w", c.Node.GetId(), what, streamErr)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("xDS client %s: waiting for %s: %w", c.Node.GetId(), what, ctx.Err())
		}
	}
}

// WaitSynced waits until the client holds what an Envoy needs to serve:
// clusters, the endpoints of every EDS cluster, listeners and every route
// they name, all ACKed.
func (c *XDSClient) WaitSynced(ctx context.Context) error {
	return c.WaitFor(ctx, "CDS, EDS, LDS and RDS", func(types map[string]*XDSTypeState) bool {
		if types[ClusterType].Applied == 0 || types[ListenerType].Applied == 0 {
			return false
		}
		for _, t := range []string{EndpointType, RouteType} {
			for _, n := range types[t].Names {
				if types[t].Resources[n] == nil {
					return false
				}
			}
		}
		return true
	})
}

func (c *XDSClient) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *XDSClient) send(reqs []*discoveryv3.DiscoveryRequest) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	for _, r := range reqs {
		if err := c.stream.Send(r); err != nil {
			return err
		}
	}
	return nil
}

func (c *XDSClient) receive() {
	defer close(c.done)
	for {
		resp, err := c.stream.Recv()
		if err != nil {
			c.mu.Lock()
			c.streamErr = err
			c.notifyLocked()
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		st := c.types[resp.GetTypeUrl()]
		if st == nil {
			// A type this client never asked for: Envoy would NACK it.
			c.mu.Unlock()
			_ = c.send([]*discoveryv3.DiscoveryRequest{{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(),
				ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: "type not subscribed"}}})
			continue
		}
		st.Received++
		c.lastReceived = time.Now()
		var reqs []*discoveryv3.DiscoveryRequest
		if c.ack {
			reqs = c.applyLocked(resp)
		} else {
			st.Ignored++
			c.pending[resp.GetTypeUrl()] = resp
		}
		c.notifyLocked()
		c.mu.Unlock()
		if err := c.send(reqs); err != nil {
			c.mu.Lock()
			c.streamErr = err
			c.notifyLocked()
			c.mu.Unlock()
			return
		}
	}
}

// requestLocked is a request for typeURL carrying what the client last
// applied of it: an ACK of that response, or a subscription change.
func (c *XDSClient) requestLocked(typeURL string) *discoveryv3.DiscoveryRequest {
	st := c.types[typeURL]
	r := &discoveryv3.DiscoveryRequest{
		TypeUrl:       typeURL,
		VersionInfo:   st.Version,
		ResponseNonce: st.Nonce,
		ResourceNames: slices.Clone(st.Names),
	}
	// As Envoy with Istio's bootstrap (set_node_on_first_message_only).
	if !c.nodeSent {
		r.Node = c.Node
		c.nodeSent = true
	}
	return r
}

// applyLocked applies resp and returns the requests Envoy would send next:
// its ACK (or NACK), then any subscription it changes or starts.
func (c *XDSClient) applyLocked(resp *discoveryv3.DiscoveryResponse) []*discoveryv3.DiscoveryRequest {
	typeURL := resp.GetTypeUrl()
	st := c.types[typeURL]
	if reason := c.reject[typeURL]; reason != "" {
		return []*discoveryv3.DiscoveryRequest{c.nackLocked(resp, reason)}
	}
	decoded := make(map[string]*XDSResource, len(resp.GetResources()))
	now := time.Now()
	for _, a := range resp.GetResources() {
		msg, name, err := decodeResource(typeURL, a)
		if err != nil {
			return []*discoveryv3.DiscoveryRequest{c.nackLocked(resp, err.Error())}
		}
		decoded[name] = &XDSResource{Name: name, Version: resp.GetVersionInfo(), Any: a, Message: msg, Updated: now}
	}
	st.Version, st.Nonce, st.LastError = resp.GetVersionInfo(), resp.GetNonce(), ""
	st.Applied++
	switch typeURL {
	case ClusterType, ListenerType:
		// State of the world: the response is every resource there is.
		st.Resources = decoded
	default:
		// EDS and RDS responses may carry only what changed.
		for n, r := range decoded {
			st.Resources[n] = r
		}
	}
	reqs := []*discoveryv3.DiscoveryRequest{c.requestLocked(typeURL)}
	switch typeURL {
	case ClusterType:
		reqs = append(reqs, c.resubscribeLocked(EndpointType, edsNames(st.Resources))...)
	case ListenerType:
		reqs = append(reqs, c.resubscribeLocked(RouteType, rdsNames(st.Resources))...)
	}
	// Envoy asks for listeners once its clusters are warm: every EDS
	// cluster has had its endpoints.
	if !c.ldsStarted && c.types[ClusterType].Applied > 0 && c.holdsAll(EndpointType) {
		c.ldsStarted = true
		reqs = append(reqs, c.requestLocked(ListenerType))
	}
	return reqs
}

// nackLocked rejects resp as Envoy does: the request carries the version
// it still runs, the rejected response's nonce and the error (gRPC
// INTERNAL, as Envoy's grpc_mux sends an update it failed to apply).
func (c *XDSClient) nackLocked(resp *discoveryv3.DiscoveryResponse, reason string) *discoveryv3.DiscoveryRequest {
	st := c.types[resp.GetTypeUrl()]
	st.Rejected++
	st.LastError = reason
	nack := c.requestLocked(resp.GetTypeUrl())
	nack.ResponseNonce = resp.GetNonce()
	nack.ErrorDetail = &statuspb.Status{Code: int32(codes.Internal), Message: reason}
	return nack
}

// resubscribeLocked changes the names subscribed for typeURL, dropping
// what is no longer subscribed; it returns the request announcing the
// change, or none when nothing changed.
func (c *XDSClient) resubscribeLocked(typeURL string, names []string) []*discoveryv3.DiscoveryRequest {
	st := c.types[typeURL]
	if slices.Equal(st.Names, names) {
		return nil
	}
	st.Names = names
	for n := range st.Resources {
		if _, ok := slices.BinarySearch(names, n); !ok {
			delete(st.Resources, n)
		}
	}
	return []*discoveryv3.DiscoveryRequest{c.requestLocked(typeURL)}
}

func (c *XDSClient) holdsAll(typeURL string) bool {
	st := c.types[typeURL]
	for _, n := range st.Names {
		if st.Resources[n] == nil {
			return false
		}
	}
	return true
}

func decodeResource(typeURL string, a *anypb.Any) (proto.Message, string, error) {
	if a.GetTypeUrl() != typeURL {
		return nil, "", fmt.Errorf("resource of type %s in a %s response", a.GetTypeUrl(), typeURL)
	}
	var msg interface {
		proto.Message
		GetName() string
	}
	switch typeURL {
	case ClusterType:
		msg = &clusterv3.Cluster{}
	case ListenerType:
		msg = &listenerv3.Listener{}
	case RouteType:
		msg = &routev3.RouteConfiguration{}
	case EndpointType:
		cla := &endpointv3.ClusterLoadAssignment{}
		if err := a.UnmarshalTo(cla); err != nil {
			return nil, "", err
		}
		return cla, cla.GetClusterName(), nil
	default:
		return nil, "", errors.New("unknown type " + typeURL)
	}
	if err := a.UnmarshalTo(msg); err != nil {
		return nil, "", err
	}
	if msg.GetName() == "" {
		return nil, "", fmt.Errorf("%s without a name", typeURL)
	}
	return msg, msg.GetName(), nil
}

// edsNames are the EDS service names of the EDS clusters, sorted.
func edsNames(clusters map[string]*XDSResource) []string {
	var names []string
	for _, r := range clusters {
		cl := r.Message.(*clusterv3.Cluster)
		if cl.GetType() != clusterv3.Cluster_EDS {
			continue
		}
		names = append(names, edsServiceName(cl))
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// listenerFilters are the network filters of l's filter chains (the
// default chain last) whose typed config is an M, decoded; a filter of
// another type, or one that does not decode, is left out.
func listenerFilters[M any, PM interface {
	*M
	proto.Message
}](l *listenerv3.Listener) []PM {
	chains := l.GetFilterChains()
	if dc := l.GetDefaultFilterChain(); dc != nil {
		chains = append(chains, dc)
	}
	var out []PM
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			m := PM(new(M))
			if tc := f.GetTypedConfig(); tc != nil && tc.MessageIs(m) && tc.UnmarshalTo(m) == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// rdsNames are the route configurations the listeners' HTTP connection
// managers ask for by name (RDS), sorted.
func rdsNames(listeners map[string]*XDSResource) []string {
	var names []string
	for _, r := range listeners {
		for _, hcm := range listenerFilters[hcmv3.HttpConnectionManager](r.Message.(*listenerv3.Listener)) {
			if n := hcm.GetRds().GetRouteConfigName(); n != "" {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// WaitQuiet waits until no response has arrived for quiet: istiod has
// pushed what it had to push (it debounces changes by 100 ms and pushes a
// proxy everything that changed at once).
func (c *XDSClient) WaitQuiet(ctx context.Context, quiet time.Duration) error {
	for {
		c.mu.Lock()
		last, changed, streamErr := c.lastReceived, c.changed, c.streamErr
		c.mu.Unlock()
		if streamErr != nil {
			return fmt.Errorf("xDS client %s: stream ended: %w", c.Node.GetId(), streamErr)
		}
		wait := quiet - time.Since(last)
		if wait <= 0 {
			return nil
		}
		select {
		case <-changed:
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("xDS client %s: istiod kept pushing for %s: %w", c.Node.GetId(), quiet, ctx.Err())
		}
	}
}
