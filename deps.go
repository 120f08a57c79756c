//go:build tools

// Pins the module set while the packages that use them are being written;
// removed once every dependency has a real importer.
package meshtriage

import (
	_ "charm.land/bubbles/v2/help"
	_ "charm.land/bubbles/v2/key"
	_ "charm.land/bubbles/v2/list"
	_ "charm.land/bubbles/v2/progress"
	_ "charm.land/bubbles/v2/spinner"
	_ "charm.land/bubbles/v2/table"
	_ "charm.land/bubbles/v2/textarea"
	_ "charm.land/bubbles/v2/textinput"
	_ "charm.land/bubbles/v2/viewport"
	_ "charm.land/bubbletea/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/charmbracelet/x/exp/golden"
	_ "github.com/charmbracelet/x/exp/teatest/v2"
	_ "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/expr-lang/expr"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/spf13/cobra"
	_ "istio.io/api/annotation"
	_ "istio.io/api/label"
	_ "istio.io/api/mesh/v1alpha1"
	_ "istio.io/client-go/pkg/clientset/versioned"
	_ "istio.io/client-go/pkg/clientset/versioned/fake"
	_ "k8s.io/cli-runtime/pkg/genericclioptions"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/portforward"
	_ "k8s.io/client-go/tools/remotecommand"
	_ "k8s.io/client-go/transport/spdy"
	_ "sigs.k8s.io/yaml"
)
