package lab

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
)

// Multi-cluster meshes (issue 30): a primary istiod on one lab reads a
// second lab's API server as a remote cluster, through a remote secret as
// `istioctl create-remote-secret` writes it.

// MultiClusterSecretLabel is the label istiod's secret controller selects
// remote secrets by (pkg/kube/multicluster MultiClusterSecretLabel), in
// its own namespace only; the Secret's name is not read.
const MultiClusterSecretLabel = "istio/multiCluster"

// ClusterNameAnnotation is what istioctl create-remote-secret writes beside
// the data key: the cluster the secret reaches. istiod reads the key.
const ClusterNameAnnotation = "networking.istio.io/cluster"

// RemoteKubeconfig is a kubeconfig reaching l's API server with the
// admin's token, everything inline (certificate-authority-data, token) and
// a current-context: istiod builds a remote cluster's client from the
// bytes alone, and its sanitizeKubeConfig (pkg/kube/util.go) refuses a
// tokenFile or client certificate and key files.
func (l *Lab) RemoteKubeconfig(clusterID string) ([]byte, error) {
	return l.remoteKubeconfig(clusterID, l.Server)
}

// remoteKubeconfig is RemoteKubeconfig reaching l at server (a Relay's
// https://ADDR): the API server's certificate is for loopback, so any
// loopback port serves.
func (l *Lab) remoteKubeconfig(clusterID, server string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterID] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: l.caPEM}
	cfg.AuthInfos[clusterID] = &clientcmdapi.AuthInfo{Token: l.adminToken}
	cfg.Contexts[clusterID] = &clientcmdapi.Context{Cluster: clusterID, AuthInfo: clusterID}
	cfg.CurrentContext = clusterID
	return clientcmd.Write(*cfg)
}

// RemoteSecret is the Secret that makes an istiod of namespace read l as
// the remote cluster clusterID: istio-remote-secret-ID (istioctl's name),
// labelled istio/multiCluster=true, its one data key the cluster ID and its
// value RemoteKubeconfig.
func (l *Lab) RemoteSecret(namespace, clusterID string) (*corev1.Secret, error) {
	return l.remoteSecret(namespace, clusterID, l.Server)
}

func (l *Lab) remoteSecret(namespace, clusterID, server string) (*corev1.Secret, error) {
	kubeconfig, err := l.remoteKubeconfig(clusterID, server)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "istio-remote-secret-" + clusterID,
			Namespace:   namespace,
			Labels:      map[string]string{MultiClusterSecretLabel: "true"},
			Annotations: map[string]string{ClusterNameAnnotation: clusterID},
		},
		Data: map[string][]byte{clusterID: kubeconfig},
	}, nil
}

// AddRemote creates, in istiod's namespace of its own API server, the remote
// secret through which it reads remote as clusterID.
func (i *Istiod) AddRemote(ctx context.Context, remote *Lab, clusterID string) error {
	return i.addRemote(ctx, remote, clusterID, remote.Server)
}

// AddRemoteThrough is AddRemote with istiod reaching remote through relay
// only, so that cutting the relay cuts istiod off from the cluster while
// the triage, which reads it directly, still can.
func (i *Istiod) AddRemoteThrough(ctx context.Context, remote *Lab, clusterID string, relay *Relay) error {
	return i.addRemote(ctx, remote, clusterID, "https://"+relay.Addr())
}

func (i *Istiod) addRemote(ctx context.Context, remote *Lab, clusterID, server string) error {
	secret, err := remote.remoteSecret(i.Namespace, clusterID, server)
	if err != nil {
		return err
	}
	if _, err := i.lab.Kube.CoreV1().Secrets(i.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("remote secret for %s: %w", clusterID, err)
	}
	return nil
}

// RemoveRemote deletes the remote secret AddRemote created: istiod closes
// the cluster and drops its endpoints.
func (i *Istiod) RemoveRemote(ctx context.Context, clusterID string) error {
	err := i.lab.Kube.CoreV1().Secrets(i.Namespace).Delete(ctx, "istio-remote-secret-"+clusterID, metav1.DeleteOptions{})
	if err != nil {
		return fmt.Errorf("remote secret for %s: %w", clusterID, err)
	}
	return nil
}

// WaitClusterz waits until istiod's /debug/clusterz (the clusters it reads
// endpoints from: itself, then one per remote secret's key) lists
// clusterID with syncStatus status, or, with status "", no longer lists it.
func (i *Istiod) WaitClusterz(ctx context.Context, clusterID, status string) error {
	var last []byte
	for {
		body, err := i.Get(ctx, istiodparse.ClusterzPath)
		if err != nil {
			return err
		}
		last = body
		clusters, err := istiodparse.ParseClusterz(body)
		if err != nil {
			return err
		}
		c, _ := clusters.Find(clusterID)
		if c.SyncStatus == status {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("istiod's clusterz never had %s %q: %s: %w", clusterID, status, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
