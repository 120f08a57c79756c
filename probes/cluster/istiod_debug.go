package cluster

import (
	"context"

	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
)

// What istiod says it reads, through its monitoring port (Cluster.Istiod):
// the clusters (its own and one per remote secret), the network gateways it
// resolved, and its endpoint index. replica "" lets the cluster pick a
// Running istiod pod. A read that fails is an error, never an empty answer:
// a remote cluster not listed must mean istiod does not read it.

// IstiodClusters reads /debug/clusterz.
func IstiodClusters(ctx context.Context, c Cluster, replica string) (istiodparse.Clusters, error) {
	body, err := c.Istiod(ctx, replica, istiodparse.ClusterzPath)
	if err != nil {
		return nil, err
	}
	return istiodparse.ParseClusterz(body)
}

// IstiodNetworkGateways reads /debug/networkz.
func IstiodNetworkGateways(ctx context.Context, c Cluster, replica string) ([]istiodparse.NetworkGateway, error) {
	body, err := c.Istiod(ctx, replica, istiodparse.NetworkzPath)
	if err != nil {
		return nil, err
	}
	return istiodparse.ParseNetworkz(body)
}

// IstiodEndpointShards reads /debug/endpointShardz for the Services match
// accepts (all when nil). istiod answers with a copy of its whole index:
// read it once per triage.
func IstiodEndpointShards(ctx context.Context, c Cluster, replica string, match func(host, namespace string) bool) ([]istiodparse.ServiceShards, error) {
	body, err := c.Istiod(ctx, replica, istiodparse.EndpointShardzPath)
	if err != nil {
		return nil, err
	}
	return istiodparse.ParseEndpointShardz(body, match)
}
