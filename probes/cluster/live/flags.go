package live

import (
	"sort"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ConfigFlags are kubectl's connection flags (--kubeconfig, --context, -n,
// --server, --request-timeout, --token, --as, --insecure-skip-tls-verify, ...),
// with kubectl's names and meaning, and KUBECONFIG and the in-cluster
// service account honoured as kubectl honours them.
//
// They are built on client-go's clientcmd alone, not on cli-runtime's
// genericclioptions.ConfigFlags: that package also holds kubectl's -f/-k
// flags, which link in kustomize and Go's plugin package, and a binary that
// links the plugin package has the linker export every symbol, 22 MB of a
// 156 MB binary (BENCHMARKS.md, "Binary size"). The fields a caller reads or
// sets are pointers, as in genericclioptions, so a command may point
// Context at a recorded context before connecting.
type ConfigFlags struct {
	KubeConfig *string
	Context    *string
	Namespace  *string
	APIServer  *string
	// Timeout is --request-timeout: a duration, "0" for none.
	Timeout *string

	// overrides hold every other flag (credentials, impersonation, TLS).
	overrides clientcmd.ConfigOverrides
}

// NewConfigFlags returns flags that select what the kubeconfig selects.
func NewConfigFlags() *ConfigFlags {
	return &ConfigFlags{
		KubeConfig: new(string),
		Context:    new(string),
		Namespace:  new(string),
		APIServer:  new(string),
		Timeout:    ptr("0"),
	}
}

func ptr(s string) *string { return &s }

// AddFlags registers the flags on fs, as kubectl registers its own.
func (f *ConfigFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(f.KubeConfig, "kubeconfig", *f.KubeConfig, "Path to the kubeconfig file to use for CLI requests.")
	fs.StringVar(f.Context, clientcmd.FlagContext, *f.Context, "The name of the kubeconfig context to use")
	fs.StringVarP(f.Namespace, clientcmd.FlagNamespace, "n", *f.Namespace, "If present, the namespace scope for this CLI request")
	fs.StringVarP(f.APIServer, clientcmd.FlagAPIServer, "s", *f.APIServer, "The address and port of the Kubernetes API server")
	fs.StringVar(f.Timeout, clientcmd.FlagTimeout, *f.Timeout, "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	// The rest as client-go names them; an empty long name binds nothing,
	// which leaves the five flags above to their fields.
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.CurrentContext.LongName = ""
	names.Timeout.LongName = ""
	names.ContextOverrideFlags.Namespace.LongName = ""
	names.ClusterOverrideFlags.APIServer.LongName = ""
	clientcmd.BindOverrideFlags(&f.overrides, fs, names)
}

// ToRawKubeConfigLoader is the kubeconfig the flags select, loaded as
// kubectl loads it: --kubeconfig, else $KUBECONFIG's files, else
// ~/.kube/config, else the pod's service account.
func (f *ConfigFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = deref(f.KubeConfig)
	// kubectl's fallback when nothing is configured (localhost:8080), so an
	// empty configuration is told apart as kubectl tells it (noKubeconfig).
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	overrides := f.overrides
	overrides.CurrentContext = deref(f.Context)
	overrides.Context.Namespace = deref(f.Namespace)
	overrides.ClusterInfo.Server = deref(f.APIServer)
	overrides.Timeout = deref(f.Timeout)
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)
}

// ToRESTConfig is the client configuration the flags select.
func (f *ConfigFlags) ToRESTConfig() (*rest.Config, error) {
	return f.ToRawKubeConfigLoader().ClientConfig()
}

// ForContext is a copy of the flags that selects context name instead of
// the current one: the same kubeconfig and loading rules and the same
// --request-timeout, as istioctl builds one client per --remote-contexts
// entry. The overrides of the current context's server, user and
// namespace (--server, --token, --user, --as, -n, ...) are not carried: a
// remote cluster is reached at its own context's server with its own
// credentials.
func (f *ConfigFlags) ForContext(name string) *ConfigFlags {
	return &ConfigFlags{
		KubeConfig: ptr(deref(f.KubeConfig)),
		Context:    ptr(name),
		Namespace:  new(string),
		APIServer:  new(string),
		Timeout:    ptr(deref(f.Timeout)),
	}
}

// CheckContexts refuses, naming it, the first of names that is not a
// context of the kubeconfig the flags load; flag is the flag that gave
// them, for the message.
func (f *ConfigFlags) CheckContexts(names []string, flag string) error {
	if len(names) == 0 {
		return nil
	}
	loader := f.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return configError(f, loader, err)
	}
	var available []string
	for n := range raw.Contexts {
		available = append(available, n)
	}
	sort.Strings(available)
	for _, n := range names {
		if _, ok := raw.Contexts[n]; !ok {
			return &ContextNotFoundError{Name: n, Available: available, Flag: flag}
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
