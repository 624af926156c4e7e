package main

// The member's agents' credentials in the control plane (ADR 0013): kfed
// join writes them where the chart's member role mounts them, kfed join
// --renew rotates them, and kfed agent-kubeconfig prints one for installs
// that bring their own Secrets.

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/identity"
)

// agentFlags say where and for how long kfed join puts the member's agents'
// tokens.
type agentFlags struct {
	namespace   string
	duration    time.Duration
	revokeAfter time.Duration
}

func (f *agentFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.namespace, "agents-namespace", kfedv1alpha1.DefaultNamespace,
		"namespace of the member where the chart's member role runs its agents: kfed join writes their control-plane tokens there, "+
			"in the Secrets kfed-healthcheck-token and kfed-coredns-token (the chart's healthcheck.tokenSecret and coredns.tokenSecret); "+
			"a member without it gets none (print them with kfed agent-kubeconfig)")
	cmd.Flags().DurationVar(&f.duration, "agent-token-duration", 365*24*time.Hour, "how long the agents' tokens are valid (the control plane may shorten it)")
	cmd.Flags().DurationVar(&f.revokeAfter, "revoke-after", 3*time.Minute,
		"with --renew: how long the agents' old tokens stay valid once the new ones are written, for the kubelet to update the mounted Secrets, within a minute or two (0: revoke them at once)")
}

// tokenSecret is the member Secret the chart mounts for c's token.
func tokenSecret(c identity.Component) string { return c.ServiceAccount() + "-token" }

// writeAgentTokens issues a token of each of cluster's agents' identities
// and writes it into the member, in f.namespace, for the chart's agents to
// mount. It returns the tokens written, none when the member has no such
// namespace (it runs no chart agents), and says what it did on out.
func (f *agentFlags) writeAgentTokens(ctx context.Context, cmd *cobra.Command, fed client.Client, raw *clientcmdapi.Config, memberContext, cluster string) ([]identity.Token, error) {
	if f.namespace == "" {
		return nil, nil
	}
	member, err := contextClient(raw, memberContext)
	if err != nil {
		return nil, err
	}
	if err := member.Get(ctx, client.ObjectKey{Name: f.namespace}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		fmt.Fprintf(cmd.OutOrStdout(), "cluster %s has no namespace %s for the chart's agents: no agent tokens written there "+
			"(kfed agent-kubeconfig %s --component healthcheck|coredns prints their kubeconfigs)\n", cluster, f.namespace, cluster)
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("cluster %s: reading namespace %s: %w", cluster, f.namespace, err)
	}
	var out []identity.Token
	for _, c := range identity.Components() {
		tok, err := identity.Issue(ctx, fed, cluster, c, f.duration)
		if err != nil {
			return out, err
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tokenSecret(c), Namespace: f.namespace}}
		if _, err := controllerutil.CreateOrUpdate(ctx, member, s, func() error {
			if s.Labels == nil {
				s.Labels = map[string]string{}
			}
			s.Labels[kfedv1alpha1.LabelManagedBy] = kfedv1alpha1.ManagedBy
			s.Data = map[string][]byte{"token": []byte(tok.Value)}
			return nil
		}); err != nil {
			return out, fmt.Errorf("cluster %s: writing Secret %s/%s: %w", cluster, f.namespace, s.Name, err)
		}
		out = append(out, tok)
		fmt.Fprintf(cmd.OutOrStdout(), "cluster %s: its %s acts in the control plane as %s/%s; token in Secret %s/%s, expires %s\n",
			cluster, c, kfedv1alpha1.MemberNamespace(cluster), c.ServiceAccount(), f.namespace, s.Name, tok.Expires.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// rotate revokes the agents' tokens but those just written, after
// f.revokeAfter.
func (f *agentFlags) rotate(ctx context.Context, cmd *cobra.Command, fed client.Client, cluster string, kept []identity.Token) error {
	if len(kept) == 0 {
		return nil
	}
	if f.revokeAfter > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "kfed join --renew: the agents' old tokens stay valid %v, until the members' kubelets have updated the mounted Secrets "+
			"(interrupted, they stay until the next --renew)\n", f.revokeAfter)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.revokeAfter):
		}
	}
	for i, c := range identity.Components()[:len(kept)] {
		if err := identity.RevokeOthers(ctx, fed, cluster, c, kept[i].Secret); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s: the agents' old tokens are revoked\n", cluster)
	return nil
}

func contextClient(raw *clientcmdapi.Config, memberContext string) (client.Client, error) {
	member, err := clusters.MemberKubeconfig(raw, memberContext)
	if err != nil {
		return nil, err
	}
	cfg, err := clusters.RESTConfig(member)
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", memberContext, err)
	}
	return client.New(cfg, client.Options{})
}

func newAgentKubeconfigCommand() *cobra.Command {
	var (
		kf        kubeconfigFlags
		component string
		server    string
		duration  time.Duration
		revoke    bool
	)
	cmd := &cobra.Command{
		Use:   "agent-kubeconfig CLUSTER --component healthcheck|coredns",
		Short: "Print a kubeconfig for a member's health checker or CoreDNS in the control plane",
		Long: `Agent-kubeconfig prints, on stdout, a kubeconfig for the identity that a joined member's health
checkers (--component healthcheck) or kfed CoreDNS (--component coredns) use in the federation control
plane, with a new token of it: for installs that bring their own Secrets (GitOps, sealed secrets) rather
than the ones kfed join writes. The identity is the ServiceAccount kfed-healthcheck or kfed-coredns of
the cluster's member namespace kfed-member-CLUSTER: the checkers may write their own HealthReports and
heartbeats there and nothing else; CoreDNS may only read. Earlier tokens stay valid, unless
--revoke-others; kfed unjoin revokes every one.`,
		Example: `  # The health checker's kubeconfig for cluster-1, into a Secret of your own:
  kfed agent-kubeconfig cluster-1 --component healthcheck --context federation > healthcheck.kubeconfig
  kubectl --context cluster-1 -n kfed-system create secret generic kfed-healthcheck-kubeconfig --from-file=kubeconfig=healthcheck.kubeconfig

  # Rotate it: a new one, every earlier token of cluster-1's checkers revoked:
  kfed agent-kubeconfig cluster-1 --component healthcheck --context federation --revoke-others > healthcheck.kubeconfig`,
		Args:              exactArgs("CLUSTER"),
		ValidArgsFunction: completeClusters(&kf),
		RunE: func(cmd *cobra.Command, args []string) error {
			comp, err := identity.ParseComponent(component)
			if err != nil {
				return fmt.Errorf("agent-kubeconfig %s: --component: %w", args[0], err)
			}
			raw, fed, err := kf.load()
			if err != nil {
				return err
			}
			ctx, name := cmd.Context(), args[0]
			if err := fed.Get(ctx, client.ObjectKey{Name: name}, &kfedv1alpha1.Cluster{}); apierrors.IsNotFound(err) {
				return fmt.Errorf("agent-kubeconfig %s: no cluster named %q is joined", name, name)
			} else if err != nil {
				return fmt.Errorf("agent-kubeconfig %s: %w", name, err)
			}
			target, err := federationCluster(raw, kf.federation, server)
			if err != nil {
				return fmt.Errorf("agent-kubeconfig %s: %w", name, err)
			}
			if err := identity.Ensure(ctx, fed, name); err != nil {
				return fmt.Errorf("agent-kubeconfig %s: %w", name, err)
			}
			tok, err := identity.Issue(ctx, fed, name, comp, duration)
			if err != nil {
				return fmt.Errorf("agent-kubeconfig %s: %w", name, err)
			}
			if revoke {
				if err := identity.RevokeOthers(ctx, fed, name, comp, tok.Secret); err != nil {
					return fmt.Errorf("agent-kubeconfig %s: %w", name, err)
				}
			}
			out, err := clientcmd.Write(*identity.Kubeconfig(target, name, comp, tok.Value, ""))
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			fmt.Fprintf(cmd.ErrOrStderr(), "kfed agent-kubeconfig: %s of cluster %s as %s/%s, token expires %s\n",
				comp, name, kfedv1alpha1.MemberNamespace(name), comp.ServiceAccount(), tok.Expires.UTC().Format(time.RFC3339))
			return err
		},
	}
	kf.add(cmd, "context")
	cmd.Flags().StringVar(&component, "component", "", "the agent: healthcheck or coredns (required)")
	_ = cmd.MarkFlagRequired("component")
	_ = cmd.RegisterFlagCompletionFunc("component", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"healthcheck", "coredns"}, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.Flags().StringVar(&server, "server", "", "the control plane's URL as the member's pods reach it (default: the federation context's server)")
	cmd.Flags().DurationVar(&duration, "token-duration", 365*24*time.Hour, "how long the token is valid (the control plane may shorten it)")
	cmd.Flags().BoolVar(&revoke, "revoke-others", false, "revoke every other token of this agent's identity: those kfed join and earlier kfed agent-kubeconfig gave")
	return cmd
}

// federationCluster is the control plane's entry of the kubeconfig, for
// the federation context (the current one when ctxName is empty), with its
// certificate authority inlined and server, if set, as its URL.
func federationCluster(raw *clientcmdapi.Config, ctxName, server string) (*clientcmdapi.Cluster, error) {
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	own, err := clusters.MemberKubeconfig(raw, ctxName)
	if err != nil {
		return nil, err
	}
	c := own.Clusters[own.Contexts[ctxName].Cluster]
	if c == nil {
		return nil, fmt.Errorf("context %q names no cluster", ctxName)
	}
	if server != "" {
		c.Server = server
	}
	return c, nil
}
