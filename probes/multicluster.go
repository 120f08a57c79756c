package probes

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// MultiClusterProbe reads the target Service in every cluster of a
// multi-cluster mesh (the current context and --remote-contexts: the
// same namespace and name, as istiod merges them) and says, endpoint by
// endpoint, its cluster and network and what a sidecar caller in the
// current cluster gets: the pod IP directly, the east-west gateway's
// ADDR:PORT, or nothing. It reads what istiod reads for that
// (pilot's EndpointsByNetworkFilter over NetworkManager's gateways):
// each cluster's EndpointSlices and pods, its control-plane namespace's
// topology.istio.io/network label and its network-labelled Services. It
// also says where those disagree: a remote cluster whose endpoints go to
// the caller as pod IPs while its gateway Service names a network (the
// label on its control-plane namespace missing or different), and a
// gateway Service istiod cannot use (a hostname only, no 15443, no
// address). The config alone says what istiod would push, not what it
// did; istiod's own word, read from the current cluster's istiod (the
// caller's control plane), says which clusters it reads (/debug/clusterz:
// a remote cluster it does not list, or lists unsynced, gives the caller
// none of its endpoints) and which network gateways it resolved
// (/debug/networkz). Either not read leaves its facts unknown, never
// absent.
type MultiClusterProbe struct{}

func (MultiClusterProbe) Meta() Meta {
	return Meta{
		ID:    "multicluster",
		Title: "The Service's endpoints in every cluster, and how the caller reaches each",
		Reads: []string{"endpointslices", "pods", "namespaces (the control plane's)", "services (labelled topology.istio.io/network)", "configmaps (istio: meshNetworks)", "each --remote-contexts cluster: the same", "istiod (current cluster; the replica the caller is connected to, found by each replica's /debug/syncz): /debug/clusterz, /debug/networkz, and /debug/endpointShardz when a remote cluster is synced"},
		Facts: []FactSpec{
			{"mc_remotes_given", FactBool, "remote clusters were given to read (--remote-contexts); false for one cluster, or an input (recording, scenario, dump) that holds one: the other clusters of the mesh, if any, were then not read"},
			{"mc_remotes_read", FactInt, "remote clusters (--remote-contexts) whose endpoints of the Service were read"},
			{"mc_remotes_unread", FactList, "remote clusters that could not be read, as CONTEXT: why (their endpoints undecided, never absent)"},
			{"mc_endpoints", FactList, "every endpoint, as CONTEXT: ADDRESS (pod) network N: what a sidecar caller in the current cluster gets"},
			{"mc_remote_direct", FactList, "endpoints of a remote cluster the caller gets as pod IPs, as CONTEXT: ADDRESS (network N)"},
			{"mc_via_gateway", FactInt, "endpoints of another network the caller reaches through a network gateway"},
			{"mc_dropped", FactList, "endpoints istiod gives the caller nothing for, as CONTEXT: ADDRESS: why"},
			{"mc_undecided", FactList, "endpoints whose path cannot be told from what was read, as CONTEXT: ADDRESS: why"},
			{"mc_label_missing", FactList, "remote clusters whose endpoints are on no network (no pod label, no label on the control-plane namespace, no meshNetworks) while their gateway Service names one, as CONTEXT: NAMESPACE=NETWORK (the value the gateway Service carries)"},
			{"mc_label_disagrees", FactList, "remote clusters whose endpoints' network differs from the one their gateway Service names, as CONTEXT: endpoints on X (from where), gateway Service NS/NAME on Y"},
			{"mc_gateway_hostname", FactList, "network gateways known only by a hostname (a load balancer's), which istiod resolves with its own DNS, as CONTEXT: NS/NAME HOSTNAME"},
			{"mc_gateway_unusable", FactList, "Services labelled with a network that istiod takes for no gateway while endpoints of that network go to the caller as pod IPs, as CONTEXT: NS/NAME: why"},
			{"mc_gateway_port_missing", FactList, "of those, the ones that lack the gateway port (15443, or their networking.istio.io/gatewayPort label's) and 15008, as CONTEXT NS/NAME"},
			{"mc_istiod_asked", FactString, "the istiod replica whose debug endpoints were read, and why that one (the caller's, as its syncz says; else the first)"},
			{"mc_istiod_clusters", FactList, "the clusters istiod says it reads (/debug/clusterz of the current cluster's istiod), as ID (secret NS/NAME or config cluster): SYNC STATUS; absent when clusterz could not be read"},
			{"mc_remote_secret_missing", FactList, "remote clusters whose pods name a cluster ID istiod's clusterz does not list (istiod reads no remote secret for it, so it pushes none of their endpoints), as CONTEXT: cluster ID X, with the command that creates the secret; absent when clusterz was not read"},
			{"mc_remote_secret_stale", FactList, "remote clusters whose cluster ID clusterz lists as not synced (timeout: istiod went ready without it; syncing), as CONTEXT: cluster ID X STATUS, with the command that recreates the secret; absent when clusterz was not read"},
			{"mc_istiod_shard_behind", FactList, "remote clusters clusterz lists synced whose endpoints of the Service in istiod's index (/debug/endpointShardz) lack some Ready in the cluster for over a minute and hold some the cluster no longer lists: istiod stopped following the cluster and pushes its old endpoints, as CONTEXT: what differs; absent when the index was not read or no remote is synced"},
			{"mc_istiod_shard_lacks", FactList, "remote clusters clusterz lists synced whose endpoints in istiod's index lack some Ready in the cluster for over a minute (and hold none it no longer lists), as CONTEXT: what is missing; absent when the index was not read or no remote is synced"},
			{"mc_istiod_clusters_not_given", FactList, "clusters istiod's clusterz lists from a remote secret whose cluster ID no --remote-contexts context's pods name: istiod reads them, the triage did not, so what is said of the mesh's clusters is partial, as ID (secret NS/NAME): why; absent when clusterz was not read"},
			{"mc_cluster_id_collision", FactList, "remote clusters whose pods name the cluster ID of istiod's own cluster, or the same ID as another context's: istiod reads one cluster per ID (a remote secret keyed by its own ID is refused), as CONTEXT: why; absent when clusterz was not read"},
			{"mc_networkz_read", FactBool, "istiod's /debug/networkz (the network gateways it resolved) was read: the gateway facts then stand on istiod's list, not on the configuration alone"},
			{"mc_istiod_gateways", FactList, "the network gateways istiod resolved (/debug/networkz), as NETWORK: ADDR:PORT (cluster C); absent when networkz could not be read"},
			{"mc_gateway_kept", FactList, "networks whose gateway Service the configuration takes for no gateway while istiod still lists a gateway for them (istiod keeps a gateway whose Service was edited in place): the configuration is stale, not istiod, as NETWORK: the Service's why; ISTIOD'S GATEWAYS"},
		},
	}
}

func (MultiClusterProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	if _, unread := cluster.RemoteClusters(c); unread != "" {
		// Known, and said: no other cluster was given to read. Nothing is
		// judged of other clusters (the causes arise only when one was),
		// but istiod's own list says whether the mesh has others.
		return forgottenRemotes(ctx, c, t, unread)
	}
	caller := mesh.Caller{Sidecar: true, NetworkUnknown: "no caller named (--from)"}
	if t.Source != nil {
		p, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name)
		if err != nil {
			caller.NetworkUnknown = cluster.AccessProblem("the caller "+t.Source.String(), err)
		} else {
			caller = mesh.CallerFromPod(p)
			if !caller.Sidecar || caller.Gateway {
				return skippedResult("the caller "+t.Source.String()+" is not a sidecar: the split-horizon endpoints of other clusters are modelled for sidecars (an ambient caller's are multicluster-ambient-gateway's)", nil)
			}
		}
	}
	in := callerview.ReadClusters(ctx, c, t)
	word := readIstiodMultiCluster(ctx, c, callerIstiod(ctx, c, t))
	word.readShards(ctx, c, t, in.Reads)
	now, ok := cluster.Now(c)
	if !ok {
		now = time.Time{}
	}
	return evaluateMultiCluster(t, caller, in, word, now)
}

// istiodMultiCluster is istiod's own word on the clusters and network
// gateways it reads; each part nil with a reason when it was not read.
type istiodMultiCluster struct {
	// Replica is the istiod pod asked ("" when the Cluster picked one);
	// ReplicaWhy says why it is that one.
	Replica, ReplicaWhy string
	Clusters            istiodparse.Clusters
	ClustersUnknown     string
	Gateways            []istiodparse.NetworkGateway
	GatewaysUnknown     string
	// Shards are the target's endpoint addresses in istiod's index, by the
	// ID of each remote cluster clusterz lists synced (nil: none there);
	// nil with ShardsUnknown when they were not read, and nil without it
	// when no remote is synced (nothing to compare).
	Shards        map[string][]string
	ShardsUnknown string
}

// forgottenRemotes is the result of a triage given no other cluster:
// when istiod's clusterz lists clusters read through remote secrets, the
// mesh spans them and istiod merges their endpoints into the Service's,
// which this triage did not read. The on-call is told which, and how to
// give them; clusterz not read leaves that unsaid (the fact absent), as
// a recording without it does, so live and replay say the same.
func forgottenRemotes(ctx context.Context, c cluster.Cluster, t cluster.Target, unread string) Result {
	r := Result{Status: StatusPass, Summary: unread, Facts: Facts{"mc_remotes_given": false}}
	asked := callerIstiod(ctx, c, t)
	clusters, err := cluster.IstiodClusters(ctx, c, asked.Replica)
	if err != nil {
		// Said without the error, whose words differ between a live
		// cluster and a replay of it.
		r.Evidence.Raw = "not known: whether istiod reads other clusters: its " + istiodparse.ClusterzPath + " was not read\n"
		return r
	}
	notGiven, _ := clustersNotGiven(nil, istiodMultiCluster{Clusters: clusters}, nil, nil)
	r.Facts["mc_istiod_clusters_not_given"] = nonNil(notGiven)
	var listed []string
	for _, c := range clusters {
		listed = append(listed, c.ID+" "+wording.Dash(c.SyncStatus))
	}
	r.Evidence.Raw = fmt.Sprintf("istiod asked: %s, %s\nclusters istiod reads (clusterz): %s\n", wording.Dash(asked.Replica), asked.Why, strings.Join(listed, "; "))
	if len(notGiven) > 0 {
		r.Status = StatusWarn
		r.Summary = fmt.Sprintf("istiod reads %s besides its own, whose endpoints it merges into the Service's; none was given to read (--remote-contexts, a kubeconfig context for each), so what istiod pushes from them was not compared: %s",
			wording.CountNoun(len(notGiven), "cluster"), strings.Join(notGiven, "; "))
		r.Commands = []string{"istioctl remote-clusters"}
	}
	return r
}

// istiodAsked is the istiod replica whose word the probe takes, and why.
type istiodAsked struct{ Replica, Why string }

// callerIstiod is the istiod replica the caller's sidecar is connected to:
// each replica reads the remote secrets itself, and one cut off from a
// remote cluster while another is not pushes the old endpoints only to
// its own proxies. Without a caller, or one no replica's syncz lists, the
// Cluster picks the replica, and the evidence says so.
func callerIstiod(ctx context.Context, c cluster.Cluster, t cluster.Target) istiodAsked {
	if t.Source == nil {
		return istiodAsked{Why: "no caller named (--from): the first istiod replica asked"}
	}
	s := cluster.FindIstiodOf(ctx, c, istioconfig.ControlPlane(c), *t.Source)
	switch {
	case s.Found:
		return istiodAsked{Replica: s.Replica, Why: "the replica the caller " + t.Source.String() + " is connected to (its syncz lists it)"}
	case s.Asked == 0:
		return istiodAsked{Why: "no istiod replica's syncz could be read (" + strings.Join(s.Unanswered, "; ") + "): the first replica asked"}
	}
	return istiodAsked{Why: "no istiod replica's syncz lists the caller " + t.Source.String() + ": the first replica asked"}
}

// readIstiodMultiCluster reads clusterz and networkz of the current
// cluster's istiod (the caller's control plane), the replica the Cluster
// picks first, as the proxy-status probe asks first: every replica reads
// the same remote secrets. endpointShardz is read apart (readShards), only
// when it can tell something.
func readIstiodMultiCluster(ctx context.Context, c cluster.Cluster, asked istiodAsked) istiodMultiCluster {
	out := istiodMultiCluster{Replica: asked.Replica, ReplicaWhy: asked.Why}
	replica := asked.Replica
	var err error
	if out.Clusters, err = cluster.IstiodClusters(ctx, c, replica); err != nil {
		out.Clusters, out.ClustersUnknown = nil, "istiod's "+istiodparse.ClusterzPath+" not read: "+wording.FirstLine(err.Error())
	}
	gws, err := cluster.IstiodNetworkGateways(ctx, c, replica)
	if err != nil {
		out.GatewaysUnknown = "istiod's " + istiodparse.NetworkzPath + " not read: " + wording.FirstLine(err.Error())
	} else if gws == nil {
		gws = []istiodparse.NetworkGateway{} // null: istiod knows no gateway
	}
	out.Gateways = gws
	return out
}

// readShards reads istiod's endpoint index (/debug/endpointShardz) when a
// remote cluster the triage read is one clusterz lists synced: then only
// the index says whether what istiod pushes still follows that cluster (a
// cluster cut off from istiod after its first sync stays "synced" while
// its endpoints in istiod stop changing, as the lab shows). The answer is
// a copy of istiod's whole index, so it is read only then, and only the
// target's entry is decoded.
func (w *istiodMultiCluster) readShards(ctx context.Context, c cluster.Cluster, t cluster.Target, reads []mesh.ClusterRead) {
	synced := map[string]bool{}
	for _, cr := range reads {
		if cr.Local || cr.ClusterID == "" || cr.SlicesUnknown != "" || w.ClustersUnknown != "" {
			continue
		}
		if listed, ok := w.Clusters.Find(cr.ClusterID); ok && listed.Remote() && listed.SyncStatus == istiodparse.SyncStatusSynced {
			synced[cr.ClusterID] = true
		}
	}
	if len(synced) == 0 {
		return
	}
	hostPrefix := t.Service + "." + t.Namespace + ".svc."
	services, err := cluster.IstiodEndpointShards(ctx, c, w.Replica, func(host, namespace string) bool {
		return namespace == t.Namespace && strings.HasPrefix(host, hostPrefix)
	})
	switch {
	case err != nil:
		w.ShardsUnknown = "istiod's " + istiodparse.EndpointShardzPath + " not read: " + wording.FirstLine(err.Error())
		return
	case len(services) == 0:
		// Not even istiod's own cluster: the Service is outside its
		// registry (discoverySelectors, or not created), which is not a
		// remote cluster's staleness.
		w.ShardsUnknown = "istiod's " + istiodparse.EndpointShardzPath + " holds no endpoint of " + hostPrefix + "* in any cluster, so whether it follows the remote clusters is not known"
		return
	}
	w.Shards = map[string][]string{}
	for id := range synced {
		w.Shards[id] = nil
		for _, svc := range services {
			for _, sh := range svc.Shards {
				if sh.Cluster != id || sh.Provider != "Kubernetes" {
					continue
				}
				for _, e := range sh.Endpoints {
					w.Shards[id] = append(w.Shards[id], e.Addresses...)
				}
			}
		}
	}
}

// shardSigns words the remote clusters whose endpoints in istiod's index
// (the shard of their cluster ID) differ from their own: behind, when
// istiod lacks endpoints Ready there for over a minute and still holds
// ones the cluster no longer has (its view of the cluster stopped); lacks,
// when it only lacks some (a stopped view of a cluster that only grew, or
// that cluster's namespace outside istiod's discoverySelectors).
func shardSigns(reads []mesh.ClusterRead, word istiodMultiCluster, now time.Time) (behind, lacks, unknown []string, known bool) {
	if word.Shards == nil {
		if word.ShardsUnknown != "" {
			unknown = append(unknown, word.ShardsUnknown)
		}
		return nil, nil, unknown, false
	}
	if now.IsZero() {
		return nil, nil, []string{"the time the input was taken is not known, so how long the remote endpoints had been Ready, and whether istiod's index is behind them, is not known"}, false
	}
	stale, unknown := mesh.StaleShards(reads, word.Shards, now)
	for _, s := range stale {
		missing := make([]string, len(s.Missing))
		for i, e := range s.Missing {
			missing[i] = e.Address
			if e.Pod != "" {
				missing[i] += " (pod " + e.Pod + ")"
			}
		}
		line := fmt.Sprintf("%s: cluster ID %s is synced in istiod's clusterz, but istiod's endpoint index lacks %s Ready there for over %s: %s",
			s.Context, s.ClusterID, wording.CountNoun(len(s.Missing), "endpoint"), mesh.ShardSettle, strings.Join(missing, ", "))
		if len(s.Gone) > 0 {
			behind = append(behind, line+fmt.Sprintf("; and it still holds %d %s the cluster no longer lists: %s. istiod stopped following the cluster (its API server unreachable from istiod, or the secret's credentials revoked) and pushes its old endpoints", len(s.Gone), wording.Plural(len(s.Gone), "address", "addresses"), strings.Join(s.Gone, ", ")))
			continue
		}
		lacks = append(lacks, line)
	}
	return behind, lacks, unknown, true
}

func evaluateMultiCluster(t cluster.Target, caller mesh.Caller, in callerview.Clusters, word istiodMultiCluster, now time.Time) Result {
	var unknown []string
	if in.MeshUnknown != "" {
		unknown = append(unknown, in.MeshUnknown)
	}
	mc := mesh.MultiClusterEndpoints(caller, in.Mesh.Networks, in.Reads)
	r := Result{Facts: Facts{}}
	r.Evidence.Columns = []string{"CLUSTER", "ADDRESS", "POD", "READY", "NETWORK", "CALLER GETS", "WHY"}
	var all, direct, dropped, undecided []string
	via := 0
	for _, e := range mc.Endpoints {
		gets := e.Gets
		if e.Gets == mesh.GetsGateway {
			var addrs []string
			for _, g := range e.Via {
				addrs = append(addrs, net.JoinHostPort(g.Address, strconv.Itoa(int(g.Port))))
			}
			gets = "via gateway " + strings.Join(addrs, ", ")
			via++
		}
		network := wording.Dash(e.Network)
		if e.NetworkFrom != "" && e.NetworkFrom != "none" {
			network += " (" + e.NetworkFrom + ")"
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{e.Context, e.Address, wording.Dash(e.Pod), strconv.FormatBool(e.Ready), network, gets, e.Why})
		all = append(all, fmt.Sprintf("%s network %s: %s", e, wording.Dash(e.Network), gets))
		switch {
		case e.Gets == mesh.GetsDirect && !e.Local:
			direct = append(direct, fmt.Sprintf("%s: %s (network %s)", e.Context, e.Address, wording.Dash(e.Network)))
		case e.Gets == mesh.GetsDropped:
			dropped = append(dropped, e.String()+": "+e.Why)
		case e.Gets == mesh.GetsUndecided:
			undecided = append(undecided, e.String()+": "+e.Why)
		}
	}
	remotesRead := 0
	for _, cr := range in.Reads {
		if !cr.Local && cr.SlicesUnknown == "" {
			remotesRead++
		}
	}
	signs := multiClusterSigns(caller, in.Reads, mc)
	signs.fromIstiod(word)
	secrets, secretsKnown := remoteSecretSigns(in.Reads, word)
	r.Facts["mc_remotes_given"] = true
	r.Facts["mc_istiod_asked"] = wording.Dash(word.Replica) + ", " + word.ReplicaWhy
	r.Facts["mc_remotes_read"] = remotesRead
	r.Facts["mc_remotes_unread"] = nonNil(mc.Unread)
	r.Facts["mc_endpoints"] = nonNil(all)
	r.Facts["mc_remote_direct"] = nonNil(direct)
	r.Facts["mc_via_gateway"] = via
	r.Facts["mc_dropped"] = nonNil(dropped)
	r.Facts["mc_undecided"] = nonNil(undecided)
	r.Facts["mc_label_missing"] = nonNil(signs.labelMissing)
	r.Facts["mc_label_disagrees"] = nonNil(signs.labelDisagrees)
	r.Facts["mc_gateway_hostname"] = nonNil(signs.hostname)
	r.Facts["mc_gateway_unusable"] = nonNil(signs.unusable)
	r.Facts["mc_gateway_port_missing"] = nonNil(signs.portMissing)
	r.Facts["mc_networkz_read"] = word.GatewaysUnknown == ""
	if word.GatewaysUnknown == "" {
		var gws []string
		for _, g := range word.Gateways {
			gws = append(gws, istiodGateway(g))
		}
		r.Facts["mc_istiod_gateways"] = nonNil(gws)
		r.Facts["mc_gateway_kept"] = nonNil(signs.kept)
	} else {
		unknown = append(unknown, word.GatewaysUnknown)
	}
	if secretsKnown {
		var listed []string
		for _, c := range word.Clusters {
			from := "config cluster"
			if c.Remote() {
				from = "secret " + c.SecretName
			}
			listed = append(listed, fmt.Sprintf("%s (%s): %s", c.ID, from, wording.Dash(c.SyncStatus)))
		}
		r.Facts["mc_istiod_clusters"] = listed
		r.Facts["mc_remote_secret_missing"] = nonNil(secrets.missing)
		r.Facts["mc_remote_secret_stale"] = nonNil(secrets.stale)
		r.Facts["mc_istiod_clusters_not_given"] = nonNil(secrets.notGiven)
		r.Facts["mc_cluster_id_collision"] = nonNil(secrets.collision)
	} else {
		unknown = append(unknown, word.ClustersUnknown)
	}
	unknown = append(unknown, secrets.unknown...)
	behind, lacks, shardsUnknown, shardsKnown := shardSigns(in.Reads, word, now)
	unknown = append(unknown, shardsUnknown...)
	if shardsKnown {
		r.Facts["mc_istiod_shard_behind"] = nonNil(behind)
		r.Facts["mc_istiod_shard_lacks"] = nonNil(lacks)
	}

	var gws []string
	for _, g := range mc.Gateways {
		gws = append(gws, g.String())
	}
	var raw strings.Builder
	fmt.Fprintf(&raw, "caller network: %s\n", callerNetwork(caller))
	fmt.Fprintf(&raw, "istiod asked: %s, %s\n", wording.Dash(word.Replica), word.ReplicaWhy)
	fmt.Fprintf(&raw, "network gateways (istiod's NetworkManager, merged from every cluster): %s\n", wording.Dash(strings.Join(gws, "; ")))
	if word.GatewaysUnknown == "" {
		var listed []string
		for _, g := range word.Gateways {
			listed = append(listed, istiodGateway(g))
		}
		fmt.Fprintf(&raw, "network gateways istiod resolved (networkz): %s\n", wording.Dash(strings.Join(listed, "; ")))
	}
	if word.ClustersUnknown == "" {
		var listed []string
		for _, c := range word.Clusters {
			listed = append(listed, c.ID+" "+wording.Dash(c.SyncStatus))
		}
		fmt.Fprintf(&raw, "clusters istiod reads (clusterz): %s\n", strings.Join(listed, "; "))
	}
	for _, cr := range in.Reads {
		fmt.Fprintf(&raw, "cluster %s: %s\n", cr.Context, describeClusterRead(cr))
	}
	for _, u := range append(unknown, mc.Unknown...) {
		fmt.Fprintf(&raw, "not known: %s\n", u)
	}
	r.Evidence.Raw = raw.String()
	for _, cr := range in.Reads {
		ctxFlag := ""
		if !cr.Local {
			ctxFlag = " --context " + cr.Context
		}
		r.Commands = append(r.Commands, fmt.Sprintf("kubectl get endpointslices%s -n %s -l kubernetes.io/service-name=%s -o wide", ctxFlag, t.Namespace, t.Service),
			fmt.Sprintf("kubectl get namespace%s %s -L %s", ctxFlag, systemNamespaceName(cr), mesh.LabelNetwork),
			fmt.Sprintf("kubectl get services%s -A -l %s -o wide", ctxFlag, mesh.LabelNetwork))
	}

	v := verdict{Head: fmt.Sprintf("%s in %s", wording.CountNoun(len(mc.Endpoints), "endpoint"), wording.CountNoun(len(in.Reads), "cluster"))}
	v.Problems = append(v.Problems, secrets.missing...)
	v.Problems = append(v.Problems, secrets.stale...)
	v.Problems = append(v.Problems, behind...)
	v.Problems = append(v.Problems, lacks...)
	v.Problems = append(v.Problems, secrets.collision...)
	v.Problems = append(v.Problems, signs.labelMissing...)
	v.Problems = append(v.Problems, signs.labelDisagrees...)
	v.Problems = append(v.Problems, signs.unusable...)
	v.Warnings = append(v.Warnings, signs.hostname...)
	v.Warnings = append(v.Warnings, signs.kept...)
	v.Warnings = append(v.Warnings, mc.Unread...)
	v.Warnings = append(v.Warnings, secrets.notGiven...)
	if len(undecided) > 0 {
		v.Warnings = append(v.Warnings, wording.CountNoun(len(undecided), "endpoint")+" undecided")
	}
	r.Status, r.Summary = v.judge()
	return r
}

func callerNetwork(c mesh.Caller) string {
	if c.NetworkUnknown != "" {
		return "not known (" + c.NetworkUnknown + ")"
	}
	return wording.Dash(c.Network)
}

func systemNamespaceName(cr mesh.ClusterRead) string {
	if cr.SystemNamespace != nil && cr.SystemNamespace.Name != "" {
		return cr.SystemNamespace.Name
	}
	return cluster.DefaultControlPlane
}

func describeClusterRead(cr mesh.ClusterRead) string {
	if cr.SlicesUnknown != "" {
		return "not read: " + cr.SlicesUnknown
	}
	id := cr.ClusterID
	if id == "" {
		id = "not known (" + cr.ClusterIDUnknown + ")"
	}
	ns := "not read (" + cr.SystemNamespaceUnknown + ")"
	switch {
	case cr.SystemNamespace == nil && cr.SystemNamespaceUnknown == "":
		ns = "absent"
	case cr.SystemNamespace != nil:
		ns = cr.SystemNamespace.Name + " " + mesh.LabelNetwork + "=" + wording.Dash(cr.SystemNamespace.Labels[mesh.LabelNetwork])
	}
	gws := "not read (" + cr.GatewaysUnknown + ")"
	if cr.GatewaysUnknown == "" {
		var names []string
		for _, s := range cr.GatewayServices {
			names = append(names, s.Namespace+"/"+s.Name+" "+mesh.LabelNetwork+"="+s.Labels[mesh.LabelNetwork])
		}
		gws = wording.Dash(strings.Join(names, ", "))
	}
	return fmt.Sprintf("cluster ID %s; namespace %s; network-labelled Services %s", id, ns, gws)
}

type mcSigns struct {
	labelMissing, labelDisagrees, hostname, unusable, portMissing []string
	// By network, for fromIstiod: the network each unusable and hostname
	// entry (and each port-missing one) stands for.
	unusableNetworks, hostnameNetworks, portMissingNetworks []string
	// kept: istiod lists a gateway the configuration says is none.
	kept []string
}

// multiClusterSigns words the model's disagreements between what a
// remote cluster's objects say of its network and what istiod makes of
// them, for the endpoints that reach the caller as pod IPs.
func multiClusterSigns(caller mesh.Caller, reads []mesh.ClusterRead, mc mesh.MultiCluster) mcSigns {
	var s mcSigns
	for _, d := range mc.Disagreements(caller, reads) {
		ref := ""
		if d.Gateway != nil {
			ref = d.Gateway.Namespace + "/" + d.Gateway.Name
		}
		ns := cluster.DefaultControlPlane
		if d.Namespace != nil && d.Namespace.Name != "" {
			ns = d.Namespace.Name
		}
		switch d.Kind {
		case mesh.NetworkLabelMissing:
			s.labelMissing = append(s.labelMissing, fmt.Sprintf("%s: %s=%s (%s of the Service on no network go to the caller as pod IPs; Service %s names network %s)",
				d.Context, ns, d.GatewayNetwork, wording.CountNoun(len(d.Endpoints), "endpoint"), ref, d.GatewayNetwork))
		case mesh.NetworkLabelDisagrees:
			s.labelDisagrees = append(s.labelDisagrees, fmt.Sprintf("%s: %s on network %s (%s), gateway Service %s on %s",
				d.Context, wording.CountNoun(len(d.Endpoints), "endpoint"), d.EndpointNetwork, d.EndpointNetworkFrom, ref, d.GatewayNetwork))
		case mesh.GatewayUnusable:
			s.unusable = append(s.unusable, fmt.Sprintf("%s: %s: %s, and %s of network %s go to the caller as pod IPs", d.Context, ref, d.Why, wording.CountNoun(len(d.Endpoints), "endpoint"), d.EndpointNetwork))
			s.unusableNetworks = append(s.unusableNetworks, d.GatewayNetwork)
			if d.PortMissing {
				s.portMissing = append(s.portMissing, d.Context+" "+ref)
				s.portMissingNetworks = append(s.portMissingNetworks, d.GatewayNetwork)
			}
		case mesh.GatewayHostname:
			s.hostname = append(s.hostname, fmt.Sprintf("%s %s (network %s)", d.Why, d.Hostname, d.GatewayNetwork))
			s.hostnameNetworks = append(s.hostnameNetworks, d.GatewayNetwork)
		}
	}
	for _, l := range [][]string{s.labelMissing, s.labelDisagrees} {
		sort.Strings(l)
	}
	return s
}

// fromIstiod stands the gateway signs on istiod's own list when networkz
// was read. A network istiod has a gateway for is not one without a
// usable gateway, whatever its Service says now: istiod keeps the gateway
// of a Service edited in place to lose its address (lab/README.md), so
// the configuration, not istiod, is then what is wrong, and it is said as
// kept. A hostname gateway istiod lists was resolved. What remains is a
// network istiod itself has no gateway for while a Service is labelled
// with it.
func (s *mcSigns) fromIstiod(word istiodMultiCluster) {
	if word.GatewaysUnknown == "" {
		listed := map[string][]string{}
		for _, g := range word.Gateways {
			listed[g.Network] = append(listed[g.Network], istiodGateway(g))
		}
		keep := func(entries, networks []string, kept *[]string) []string {
			var out []string
			for i, e := range entries {
				if gws := listed[networks[i]]; len(gws) > 0 {
					if kept != nil {
						*kept = append(*kept, fmt.Sprintf("network %s: %s; istiod still lists %s", networks[i], e, strings.Join(gws, ", ")))
					}
					continue
				}
				out = append(out, e)
			}
			return out
		}
		s.unusable = keep(s.unusable, s.unusableNetworks, &s.kept)
		s.portMissing = keep(s.portMissing, s.portMissingNetworks, nil)
		s.hostname = keep(s.hostname, s.hostnameNetworks, nil)
	}
	for _, l := range [][]string{s.hostname, s.unusable, s.portMissing, s.kept} {
		sort.Strings(l)
	}
}

func istiodGateway(g istiodparse.NetworkGateway) string {
	port := g.Port
	if port == 0 {
		port = g.HBONEPort
	}
	return fmt.Sprintf("%s: %s (cluster %s)", g.Network, net.JoinHostPort(g.Addr, strconv.Itoa(int(port))), wording.Dash(g.Cluster))
}

type secretSigns struct {
	missing, stale, collision, unknown []string
	// notGiven: clusters istiod reads that no context given names.
	notGiven []string
}

// remoteSecretSigns compares the cluster IDs the remote contexts' pods
// name with the clusters istiod's clusterz lists (§2.3 of the design
// note): an ID not listed is a cluster istiod reads no secret for; one
// listed but timed out or still syncing gives the caller none (or not
// all) of its endpoints. A remote whose ID was not read yields nothing.
// known is false when clusterz was not read: nothing is then said.
func remoteSecretSigns(reads []mesh.ClusterRead, word istiodMultiCluster) (s secretSigns, known bool) {
	if word.ClustersUnknown != "" || len(word.Clusters) == 0 {
		return s, false
	}
	localCtx, ownID := "", ""
	for _, cr := range reads {
		if cr.Local {
			localCtx = cr.Context
		}
	}
	for _, c := range word.Clusters {
		if !c.Remote() {
			ownID = c.ID
			break
		}
	}
	byID := map[string][]string{}
	for _, cr := range reads {
		if cr.Local || cr.SlicesUnknown != "" {
			continue
		}
		if cr.ClusterID == "" {
			s.unknown = append(s.unknown, cr.Context+": whether istiod reads it is not known: its cluster ID is not ("+cr.ClusterIDUnknown+")")
			continue
		}
		byID[cr.ClusterID] = append(byID[cr.ClusterID], cr.Context)
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		contexts := byID[id]
		switch {
		case id == ownID:
			for _, ctx := range contexts {
				s.collision = append(s.collision, fmt.Sprintf("%s: its pods name cluster ID %s, istiod's own cluster's: istiod refuses a remote secret of that ID (\"would overwrite the config cluster\"), so unless the context is the current cluster itself istiod reads none of it; give it its own ID (values.global.multiCluster.clusterName) and a secret named by it", ctx, id))
			}
			continue
		case len(contexts) > 1:
			s.collision = append(s.collision, fmt.Sprintf("%s: their pods all name cluster ID %s: istiod reads one cluster per ID, so unless they are one cluster it reads only one of them; give each its own ID (values.global.multiCluster.clusterName) and a secret named by it", strings.Join(contexts, ", "), id))
			continue
		}
		ctx := contexts[0]
		cmd := createRemoteSecretCommand(ctx, id, localCtx)
		listed, ok := word.Clusters.Find(id)
		switch {
		case !ok:
			s.missing = append(s.missing, fmt.Sprintf("%s: cluster ID %s is not among the clusters istiod reads (clusterz), so it pushes none of its endpoints; create its remote secret: %s", ctx, id, cmd))
		case listed.SyncStatus == istiodparse.SyncStatusTimeout || listed.SyncStatus == istiodparse.SyncStatusSyncing || listed.SyncStatus == istiodparse.SyncStatusClosed:
			why := "istiod has not read its endpoints (the secret's credentials or address may be stale)"
			if listed.SyncStatus == istiodparse.SyncStatusClosed {
				// pkg/kube/multicluster: a cluster is closed when its
				// secret is deleted or replaced; istiod reads none of it.
				why = "istiod closed it (its secret deleted or replaced) and reads none of its endpoints"
			}
			s.stale = append(s.stale, fmt.Sprintf("%s: cluster ID %s is %s in istiod's clusterz (secret %s): %s; recreate it: %s", ctx, id, listed.SyncStatus, listed.SecretName, why, cmd))
		}
	}
	s.notGiven, s.unknown = clustersNotGiven(reads, word, byID, s.unknown)
	return s, true
}

// clustersNotGiven are the remote clusters istiod's clusterz lists that
// no context given names (byID: the contexts by the cluster ID their pods
// name): istiod reads their endpoints, the triage read none of their
// objects, so its view of the mesh is partial there, not the mesh without
// them. While a given remote's cluster ID is not known, one of those may
// be it: that is said as unknown, not as not given.
func clustersNotGiven(reads []mesh.ClusterRead, word istiodMultiCluster, byID map[string][]string, unknown []string) (notGiven, unknownOut []string) {
	var idUnknown []string
	for _, cr := range reads {
		if !cr.Local && cr.ClusterID == "" {
			idUnknown = append(idUnknown, cr.Context)
		}
	}
	for _, c := range word.Clusters {
		if !c.Remote() || len(byID[c.ID]) > 0 {
			continue
		}
		if len(idUnknown) > 0 {
			unknown = append(unknown, fmt.Sprintf("istiod reads cluster %s (secret %s): whether it is %s, whose cluster ID is not known, is not known", c.ID, c.SecretName, strings.Join(idUnknown, ", ")))
			continue
		}
		notGiven = append(notGiven, fmt.Sprintf("%s (secret %s): istiod reads cluster %s; it was not given (--remote-contexts), so its objects were not read", c.ID, c.SecretName, c.ID))
	}
	sort.Strings(notGiven)
	return notGiven, unknown
}

// createRemoteSecretCommand is istioctl's command that makes the current
// cluster's istiod read the remote context's cluster as id; without a
// current context's name (in-cluster credentials) kubectl applies to the
// one it runs against.
func createRemoteSecretCommand(remoteCtx, id, localCtx string) string {
	apply := "kubectl apply -f -"
	if localCtx != "" && localCtx != "(current)" {
		apply += " --context=" + localCtx
	}
	return fmt.Sprintf("istioctl create-remote-secret --context=%s --name=%s | %s", remoteCtx, id, apply)
}
