package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	"github.com/kfed-io/kfed/clusters"
)

// probeTimeout bounds the question every command that reads the control
// plane asks first: does it answer?
const probeTimeout = 10 * time.Second

// kubeconfigFlags are the flags that locate the kubeconfig and the
// federation control plane's context in it. --context always names the
// federation's context, as kubectl's does; a command that needs a member's
// context has its own flag for it (join's --member-context).
type kubeconfigFlags struct {
	path       string
	federation string
}

func (f *kubeconfigFlags) add(cmd *cobra.Command, contextFlag string) {
	cmd.Flags().StringVar(&f.path, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&f.federation, contextFlag, "", "context of the federation control plane (default: the current context)")
	_ = cmd.RegisterFlagCompletionFunc(contextFlag, func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return contextNames(f)
	})
}

func (f *kubeconfigFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.path
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.federation})
}

// files names the kubeconfig files read, for messages.
func (f *kubeconfigFlags) files() string {
	if f.path != "" {
		return f.path
	}
	return strings.Join(clientcmd.NewDefaultClientConfigLoadingRules().GetLoadingPrecedence(), ":")
}

// errNoKubeconfig says how to give kfed a kubeconfig, instead of client-go's
// "try setting KUBERNETES_MASTER", which no kfed user needs.
func (f *kubeconfigFlags) errNoKubeconfig() error {
	return fmt.Errorf("no kubeconfig with a context at %s: give --kubeconfig FILE or set KUBECONFIG "+
		"(kfed dev up writes .kfed-dev/kubeconfig; `source .kfed-dev/env` sets it)", f.files())
}

// config reads the kubeconfig and the federation's client configuration,
// with errors that say which file and context and what to give instead.
func (f *kubeconfigFlags) config() (*clientcmdapi.Config, *rest.Config, string, error) {
	loader := f.loader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, nil, "", fmt.Errorf("reading kubeconfig %s: %w (give --kubeconfig FILE)", f.files(), err)
	}
	name := cmp.Or(f.federation, raw.CurrentContext)
	contexts := slices.Sorted(maps.Keys(raw.Contexts))
	switch {
	case len(raw.Contexts) == 0 && f.federation == "":
		// In a pod, client-go falls back to the pod's ServiceAccount.
		if cfg, err := loader.ClientConfig(); err == nil {
			return &raw, cfg, "in-cluster", nil
		}
		return nil, nil, "", f.errNoKubeconfig()
	case name == "":
		return nil, nil, "", fmt.Errorf("kubeconfig %s has no current context: give --context with the federation's, one of %v", f.files(), contexts)
	case raw.Contexts[name] == nil && f.federation != "":
		return nil, nil, "", fmt.Errorf("federation context %q is not in the kubeconfig %s (it has %v): give --context with one of them", name, f.files(), contexts)
	case raw.Contexts[name] == nil:
		return nil, nil, "", fmt.Errorf("the current context %q is not in the kubeconfig %s (it has %v): give --context with the federation's", name, f.files(), contexts)
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, nil, "", f.errNoKubeconfig()
		}
		return nil, nil, "", fmt.Errorf("federation context %q of kubeconfig %s: %w", name, f.files(), err)
	}
	return &raw, cfg, name, nil
}

// restConfig is the control plane's client configuration; --watch needs it
// for watches, which the client load returns cannot make.
func (f *kubeconfigFlags) restConfig() (*rest.Config, error) {
	_, cfg, _, err := f.config()
	return cfg, err
}

// namespace is ns, or when it is empty the namespace of the federation's
// context in the kubeconfig ("default" when it names none), as kubectl
// chooses it.
func (f *kubeconfigFlags) namespace(ns string) string {
	if ns != "" {
		return ns
	}
	if n, _, err := f.loader().Namespace(); err == nil && n != "" {
		return n
	}
	return "default"
}

// load reads the kubeconfig and returns it with a client for the control
// plane, once the control plane has answered: an unreachable one is then
// named, with its context, before any command does anything. It takes no
// context.Context, as every command calls it before it has work to
// cancel; the question is bounded by probeTimeout.
func (f *kubeconfigFlags) load() (*clientcmdapi.Config, client.Client, error) {
	raw, cfg, name, err := f.config()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if _, err := clusters.Probe(ctx, cfg); err != nil {
		return nil, nil, fmt.Errorf("the federation control plane at %s (context %q) does not answer: %w; "+
			"check that it runs and that --context names the federation's context (try: kubectl --context %s get --raw /readyz)",
			cfg.Host, name, unwrapURL(err), name)
	}
	scheme, err := kfedscheme.New()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("federation control plane at %s (context %q): %w", cfg.Host, name, err)
	}
	return raw, c, nil
}

// contextNames are the kubeconfig's contexts, for --context and
// --member-context.
func contextNames(kf *kubeconfigFlags) ([]cobra.Completion, cobra.ShellCompDirective) {
	raw, err := kf.loader().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return slices.Sorted(maps.Keys(raw.Contexts)), cobra.ShellCompDirectiveNoFileComp
}

// unwrapURL drops the "Get \"URL\":" that net/http puts before the
// reason, which the caller's message has said already.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
