// Package access builds a client config for a cluster of the Cluster
// Inventory API from its ClusterProfile's access providers and the exec
// plugins the consumer configured for them (KEP-5339): the profile says where
// the cluster is (server, CA, extensions), the provider file says which
// program hands out credentials for each provider name. Credentials are never
// read from the profile nor stored: client-go runs the plugin when it needs a
// token.
//
// The provider file is the format of cluster-inventory-api's pkg/access:
//
//	{"providers": [{"name": "secretreader",
//	  "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
//	    "command": "/bin/secretreader-plugin", "provideClusterInfo": true},
//	  "profileSourcedCLIArgsPolicy": "Append",
//	  "profileSourcedEnvVarsPolicy": "AppendIfNotExists"}]}
package access

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	"sigs.k8s.io/yaml"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
)

// Policies for the arguments and environment variables a profile adds to a
// provider's plugin through its extensions. Without a policy the profile's
// additions are ignored: the consumer decides what runs on its machine.
const (
	ArgsAppend            = "Append"
	ArgsIgnore            = "Ignore"
	EnvsAppendIfNotExists = "AppendIfNotExists"
	EnvsReplace           = "Replace"
	EnvsIgnore            = "Ignore"
)

// Provider maps one access provider name to the exec plugin that hands out
// its credentials.
type Provider struct {
	Name                        string                   `json:"name"`
	ExecConfig                  *clientcmdapi.ExecConfig `json:"execConfig"`
	ProfileSourcedCLIArgsPolicy string                   `json:"profileSourcedCLIArgsPolicy,omitempty"`
	ProfileSourcedEnvVarsPolicy string                   `json:"profileSourcedEnvVarsPolicy,omitempty"`
}

// Config is a provider file: the providers a consumer can use, in order of
// preference.
type Config struct {
	Providers []Provider `json:"providers"`
}

// Load reads and checks a provider file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading access provider file: %w", err)
	}
	return Parse(data)
}

// Parse reads and checks a provider file's contents (JSON or YAML).
func Parse(data []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("access provider file: %w", err)
	}
	if len(c.Providers) == 0 {
		return nil, fmt.Errorf("access provider file names no provider")
	}
	seen := map[string]bool{}
	for i, p := range c.Providers {
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("access provider file: provider %d has no name", i)
		case seen[p.Name]:
			return nil, fmt.Errorf("access provider file: provider %q is named twice", p.Name)
		case p.ExecConfig == nil || p.ExecConfig.Command == "":
			return nil, fmt.Errorf("access provider file: provider %q has no execConfig.command", p.Name)
		}
		if !slices.Contains([]string{"", ArgsAppend, ArgsIgnore}, p.ProfileSourcedCLIArgsPolicy) {
			return nil, fmt.Errorf("access provider file: provider %q: unknown profileSourcedCLIArgsPolicy %q", p.Name, p.ProfileSourcedCLIArgsPolicy)
		}
		if !slices.Contains([]string{"", EnvsAppendIfNotExists, EnvsReplace, EnvsIgnore}, p.ProfileSourcedEnvVarsPolicy) {
			return nil, fmt.Errorf("access provider file: provider %q: unknown profileSourcedEnvVarsPolicy %q", p.Name, p.ProfileSourcedEnvVarsPolicy)
		}
		seen[p.Name] = true
	}
	return &c, nil
}

// Pick returns the profile's access provider that c has a plugin for, in the
// order of c's providers, and that plugin; false when there is none. Of two
// providers of one name, accessProviders wins over the deprecated
// credentialProviders.
func (c *Config) Pick(p *inventoryv1alpha1.ClusterProfile) (inventoryv1alpha1.AccessProvider, Provider, bool) {
	offered := map[string]inventoryv1alpha1.AccessProvider{}
	for _, ap := range p.Status.CredentialProviders {
		offered[ap.Name] = ap
	}
	for _, ap := range p.Status.AccessProviders {
		offered[ap.Name] = ap
	}
	for _, pr := range c.Providers {
		if ap, ok := offered[pr.Name]; ok {
			return ap, pr, true
		}
	}
	return inventoryv1alpha1.AccessProvider{}, Provider{}, false
}

// RESTConfig builds the client config that reaches the profile's cluster.
func (c *Config) RESTConfig(p *inventoryv1alpha1.ClusterProfile) (*rest.Config, error) {
	ap, pr, ok := c.Pick(p)
	if !ok {
		return nil, fmt.Errorf("ClusterProfile %s/%s offers no access provider kfed has a plugin for (it offers %v; kfed has %v)",
			p.Namespace, p.Name, offeredNames(p), c.names())
	}
	if ap.Cluster.Server == "" {
		return nil, fmt.Errorf("ClusterProfile %s/%s: access provider %q has no server", p.Namespace, p.Name, ap.Name)
	}
	// A copy: the profile's additions must not pile up on the shared one.
	exec := pr.ExecConfig.DeepCopy()
	exec.InteractiveMode = clientcmdapi.NeverExecInteractiveMode
	cluster := clientcmdapi.NewCluster()
	if err := clientcmdlatest.Scheme.Convert(&ap.Cluster, cluster, nil); err != nil {
		return nil, fmt.Errorf("ClusterProfile %s/%s: access provider %q: %w", p.Namespace, p.Name, ap.Name, err)
	}
	if ext, ok := cluster.Extensions[inventoryv1alpha1.ExecExtension]; ok {
		exec.Config = ext
	}
	for _, ext := range ap.Cluster.Extensions {
		var err error
		switch ext.Name {
		case inventoryv1alpha1.ExecArgsExtension:
			err = addArgs(exec, ext.Extension.Raw, pr.ProfileSourcedCLIArgsPolicy)
		case inventoryv1alpha1.ExecEnvsExtension:
			err = addEnvs(exec, ext.Extension.Raw, pr.ProfileSourcedEnvVarsPolicy)
		}
		if err != nil {
			return nil, fmt.Errorf("ClusterProfile %s/%s: access provider %q: extension %s: %w", p.Namespace, p.Name, ap.Name, ext.Name, err)
		}
	}
	return &rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: cluster.CertificateAuthorityData, CAFile: cluster.CertificateAuthority,
			ServerName: cluster.TLSServerName, Insecure: cluster.InsecureSkipTLSVerify,
		},
		ExecProvider: exec,
	}, nil
}

func addArgs(exec *clientcmdapi.ExecConfig, raw []byte, policy string) error {
	if policy != ArgsAppend {
		return nil
	}
	var args []string
	if err := yaml.Unmarshal(raw, &args); err != nil {
		return fmt.Errorf("want a list of arguments: %w", err)
	}
	exec.Args = append(exec.Args, args...)
	return nil
}

func addEnvs(exec *clientcmdapi.ExecConfig, raw []byte, policy string) error {
	if policy != EnvsAppendIfNotExists && policy != EnvsReplace {
		return nil
	}
	var envs map[string]string
	if err := yaml.Unmarshal(raw, &envs); err != nil {
		return fmt.Errorf("want a map of environment variables: %w", err)
	}
	for _, e := range exec.Env {
		// The consumer's own value wins with AppendIfNotExists, the
		// profile's with Replace.
		if _, set := envs[e.Name]; !set || policy == EnvsAppendIfNotExists {
			envs[e.Name] = e.Value
		}
	}
	exec.Env = exec.Env[:0]
	for _, name := range slices.Sorted(maps.Keys(envs)) {
		exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: name, Value: envs[name]})
	}
	return nil
}

func offeredNames(p *inventoryv1alpha1.ClusterProfile) []string {
	var out []string
	for _, ap := range append(slices.Clone(p.Status.AccessProviders), p.Status.CredentialProviders...) {
		out = append(out, ap.Name)
	}
	return out
}

func (c *Config) names() []string {
	out := make([]string, 0, len(c.Providers))
	for _, p := range c.Providers {
		out = append(out, p.Name)
	}
	return out
}
