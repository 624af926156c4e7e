package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/internal/geo"
)

// newJoinCommand is `kfed join`. It is longer than 80 lines because it
// declares every flag with its help text beside the few lines that turn
// them into clusters.JoinOptions; the work is in clusters.Join.
func newJoinCommand() *cobra.Command {
	var (
		kf            kubeconfigFlags
		opts          clusters.JoinOptions
		sa            string
		tokenDuration time.Duration
		renew         bool
		location      string
		agents        agentFlags
	)
	cmd := &cobra.Command{
		Use:   "join NAME [--member-context C] [--region R --zone Z]",
		Short: "Register a member cluster with the federation",
		Long: `Join registers a member cluster: it checks that the cluster answers, stores a kubeconfig for it
in a Secret in the control plane and creates the Cluster object. The member's context (--member-context,
default NAME) and the federation's (--context, default the current context) are both read from
--kubeconfig. Nothing is changed when a check fails.

The member's agents get identities of their own in the control plane: the ServiceAccounts kfed-healthcheck
and kfed-coredns of the namespace kfed-member-NAME, where the checkers may write their own HealthReports and
heartbeats and nothing else, and CoreDNS may only read. Their tokens go into the member's --agents-namespace
(the chart's Secrets kfed-healthcheck-token and kfed-coredns-token); --max-checkers bounds how many of the
member's checkers count in a quorum.

With --renew, a joined cluster keeps everything (its Cluster, shards, copies and DNS records) and only
its stored credentials are replaced: with the context's own, or with a new --service-account token; its
agents get new tokens, and their old ones are revoked after --revoke-after.
It is the way to replace an expired or revoked token; unjoin and join again would delete the
cluster's shards and take it out of every answer meanwhile.

With --service-account NAMESPACE/NAME (kfed-system/kfed-member, which the kfed chart installs in
a member), the stored kubeconfig holds a token of that ServiceAccount instead of the context's own
credentials, which in-cluster kfed-controller often cannot use (exec plugins such as
aws-iam-authenticator or gke-gcloud-auth-plugin) and which grant more than kfed needs.`,
		Example: `  # Join two clusters as the chart's member ServiceAccount:
  kfed join cluster-1 --member-context cluster-1 --context federation --service-account kfed-system/kfed-member
  kfed join cluster-2 --member-context cluster-2 --region europe-west1 --zone europe-west1-b --context federation

  # Replace cluster-1's token before it expires (or after it was revoked); nothing else changes:
  kfed join cluster-1 --member-context cluster-1 --context federation --service-account kfed-system/kfed-member --renew`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: completeContexts(&kf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := oldContextFlags(cmd, &kf, &opts.Context); err != nil {
				return err
			}
			if location != "" {
				p, err := geo.Parse(location)
				if err != nil {
					return fmt.Errorf("join %s: --location: %w", args[0], err)
				}
				opts.Location = &p
			}
			raw, fed, err := kf.load()
			if err != nil {
				return err
			}
			opts.Name, opts.Kubeconfig = args[0], raw
			var expires time.Time
			if sa != "" {
				opts.Context = cmp.Or(opts.Context, opts.Name)
				opts.Kubeconfig, expires, err = serviceAccountKubeconfig(cmd.Context(), raw, opts.Context, sa, tokenDuration)
				if err != nil {
					return fmt.Errorf("join %s: %w", args[0], err)
				}
			}
			memberContext := cmp.Or(opts.Context, opts.Name)
			if renew {
				if err := renewJoined(cmd, fed, opts, sa, expires); err != nil {
					return err
				}
				return renewAgents(cmd, fed, raw, memberContext, opts.Name, agents)
			}
			c, err := clusters.Join(cmd.Context(), fed, opts)
			if err != nil {
				return fmt.Errorf("join %s: %w", args[0], err)
			}
			region, zones := c.Location()
			from := ""
			if c.Spec.Region == "" || len(c.Spec.Zones) == 0 {
				from = "; read from its nodes, and following them"
			}
			where := "no location: its region is not in kfed's table of cloud regions; give --location to order it by distance"
			if p, ok, _ := c.Coordinates(); ok {
				where = "location " + p.String()
				if c.Spec.Location == nil {
					where += ", its region's"
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s joined (region %s, zones %v%s; %s)\n", c.Name, region, zones, from, where)
			if sa != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "kfed acts in %s as ServiceAccount %s; its token expires %s\n",
					c.Name, sa, expires.UTC().Format(time.RFC3339))
			}
			if _, err := agents.writeAgentTokens(cmd.Context(), cmd, fed, raw, memberContext, c.Name); err != nil {
				return fmt.Errorf("join %s: the agents' tokens: %w", args[0], err)
			}
			return nil
		},
	}
	kf.add(cmd, "context")
	cmd.Flags().StringVar(&opts.Context, "member-context", "", "kubeconfig context of the member cluster (default NAME)")
	addOldFederationContext(cmd)
	_ = cmd.RegisterFlagCompletionFunc("member-context", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return contextNames(&kf)
	})
	cmd.Flags().StringVar(&opts.Region, "region", "", "region the cluster runs in, e.g. us-east1 (default: its nodes' topology.kubernetes.io/region label)")
	cmd.Flags().StringSliceVar(&opts.Zones, "zone", nil, "zone the cluster runs in, e.g. us-east1-b (repeat for several; default: its nodes' topology.kubernetes.io/zone labels, followed as they change)")
	cmd.Flags().StringVar(&location, "location", "", "where the cluster is, LATITUDE,LONGITUDE in decimal degrees, e.g. 40.71,-74.01, for ordering clusters by distance (default: its region's place in kfed's table of AWS, Google Cloud and Azure regions)")
	cmd.Flags().Int32Var(&opts.MaxCheckers, "max-checkers", 0, "how many of the member's health checkers count in a quorum, whatever it runs (default 1, the chart's one agent; its spec.healthCheck.maxCheckers)")
	cmd.Flags().StringVar(&opts.ClusterSet, "clusterset", "", "the federation's name, written as the member's ClusterProperty clusterset.k8s.io (KEP-2149) when it has none; its cluster.clusterset.k8s.io is always written as NAME when absent")
	cmd.Flags().StringVar(&opts.Namespace, "secret-namespace", "", "namespace of the kubeconfig Secret in the control plane (default kfed-system)")
	cmd.Flags().StringVar(&opts.Namespace, "namespace", "", "")
	_ = cmd.Flags().MarkDeprecated("namespace", "use --secret-namespace (-n names the objects a command lists)")
	cmd.Flags().StringVar(&sa, "service-account", "", "NAMESPACE/NAME of a ServiceAccount in the member (the chart's kfed-system/kfed-member) whose token kfed uses there, instead of the context's credentials")
	cmd.Flags().DurationVar(&tokenDuration, "token-duration", 365*24*time.Hour, "how long the --service-account token is valid (the member's API server may shorten it)")
	cmd.Flags().BoolVar(&renew, "renew", false, "the cluster is joined already: replace only its stored credentials (the context's, or a new --service-account token) and its agents' tokens, keeping its shards and records")
	agents.add(cmd)
	return cmd
}

// renewAgents brings the joined cluster's agents' identities in line with
// this kfed, writes new tokens where the chart's agents mount them and
// revokes the old ones once the members have had time to read the new.
func renewAgents(cmd *cobra.Command, fed client.Client, raw *clientcmdapi.Config, memberContext, cluster string, agents agentFlags) error {
	ctx := cmd.Context()
	if err := identity.Ensure(ctx, fed, cluster); err != nil {
		return fmt.Errorf("join %s --renew: %w", cluster, err)
	}
	written, err := agents.writeAgentTokens(ctx, cmd, fed, raw, memberContext, cluster)
	if err != nil {
		return fmt.Errorf("join %s --renew: the agents' tokens: %w", cluster, err)
	}
	if err := agents.rotate(ctx, cmd, fed, cluster, written); err != nil {
		return fmt.Errorf("join %s --renew: %w", cluster, err)
	}
	return nil
}

// renewJoined replaces the stored credentials of the joined cluster
// opts.Name with those of opts.Kubeconfig (a --service-account kubeconfig
// already, when sa is set): the renewal that changes nothing else.
func renewJoined(cmd *cobra.Command, fed client.Client, opts clusters.JoinOptions, sa string, expires time.Time) error {
	member := opts.Kubeconfig
	if sa == "" {
		var err error
		if member, err = clusters.MemberKubeconfig(opts.Kubeconfig, cmp.Or(opts.Context, opts.Name)); err != nil {
			return fmt.Errorf("join %s --renew: %w", opts.Name, err)
		}
	}
	if err := clusters.RenewKubeconfig(cmd.Context(), fed, opts.Name, member); err != nil {
		return fmt.Errorf("join %s --renew: %w", opts.Name, err)
	}
	if sa == "" {
		fmt.Fprintf(cmd.OutOrStdout(), "cluster %s: kfed now uses context %s's credentials there; its shards and records are unchanged\n",
			opts.Name, cmp.Or(opts.Context, opts.Name))
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s: kfed acts there as ServiceAccount %s with a new token, which expires %s; its shards and records are unchanged\n",
		opts.Name, sa, expires.UTC().Format(time.RFC3339))
	return nil
}

// addOldFederationContext keeps --federation-context, the federation's
// context flag of join and unjoin before --context meant the federation in
// every command, working: hidden, with a deprecation message.
func addOldFederationContext(cmd *cobra.Command) {
	cmd.Flags().String("federation-context", "", "")
	_ = cmd.Flags().MarkDeprecated("federation-context", "use --context, which names the federation's context in every kfed command")
}

// oldContextFlags reads a command line written before --context meant the
// federation: with --federation-context given, that names the federation's
// context and --context keeps its old meaning in join, the member's
// (member is nil for a command without one).
func oldContextFlags(cmd *cobra.Command, kf *kubeconfigFlags, member *string) error {
	fl := cmd.Flags()
	if !fl.Changed("federation-context") {
		return nil
	}
	old, _ := fl.GetString("federation-context")
	if fl.Changed("context") {
		if member == nil || fl.Changed("member-context") {
			return fmt.Errorf("--federation-context %s and --context %s both name the federation's context: give --context only", old, kf.federation)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "kfed %s: with --federation-context, --context %s is read as the member's context, as before; write --member-context %s --context %s\n",
			cmd.Name(), kf.federation, kf.federation, old)
		*member = kf.federation
	}
	kf.federation = old
	return nil
}

// serviceAccountKubeconfig returns the kubeconfig of the member's context
// ctxName with its credentials replaced by a token of ServiceAccount sa
// ("NAMESPACE/NAME"), requested with those credentials, and when the token
// expires.
func serviceAccountKubeconfig(ctx context.Context, raw *clientcmdapi.Config, ctxName, sa string, d time.Duration) (*clientcmdapi.Config, time.Time, error) {
	ns, name, ok := strings.Cut(sa, "/")
	if !ok || ns == "" || name == "" {
		return nil, time.Time{}, fmt.Errorf("--service-account %q: want NAMESPACE/NAME, such as kfed-system/kfed-member", sa)
	}
	member, err := clusters.MemberKubeconfig(raw, ctxName)
	if err != nil {
		return nil, time.Time{}, err
	}
	cfg, err := clusters.RESTConfig(member)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("context %q: %w", ctxName, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("context %q: %w", ctxName, err)
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(tctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(d.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("a token of ServiceAccount %s in context %q (install the kfed chart there with role=member first): %w", sa, ctxName, err)
	}
	user := "kfed-" + name
	out := member.DeepCopy()
	out.AuthInfos = map[string]*clientcmdapi.AuthInfo{user: {Token: tr.Status.Token}}
	out.Contexts[ctxName].AuthInfo = user
	return out, tr.Status.ExpirationTimestamp.Time, nil
}

func newUnjoinCommand() *cobra.Command {
	var (
		kf   kubeconfigFlags
		wait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "unjoin NAME",
		Short: "Remove a member cluster from the federation, deleting kfed's copies in it",
		Long: `Unjoin removes a member cluster from the federation. This deletes, in the member, every copy
(shard) kfed made there of the federation's Services and Deployments, takes the cluster out of every DNS
answer, and deletes its Cluster object and stored kubeconfig. What kfed adopted rather than created is
released and left in place; objects the member's own users made are not touched. A member that cannot be
reached is let go after two minutes, its copies left behind.

Not what you want?
  - to replace expired or revoked credentials, keep everything: kfed join NAME --renew
  - to take the cluster out of DNS answers for a while and bring it back: kfed drain NAME`,
		Example: `  # Remove cluster-3, waiting up to 5 minutes for its copies to be deleted:
  kfed unjoin cluster-3 --context federation --wait 5m`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: completeClusters(&kf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := oldContextFlags(cmd, &kf, nil); err != nil {
				return err
			}
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kfed unjoin: deleting kfed's copies of the federation's objects in cluster %s and taking it out of DNS\n", args[0])
			if err := clusters.Unjoin(cmd.Context(), fed, args[0], wait); err != nil {
				return fmt.Errorf("unjoin %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s unjoined\n", args[0])
			return nil
		},
	}
	kf.add(cmd, "context")
	addOldFederationContext(cmd)
	cmd.Flags().DurationVar(&wait, "wait", 3*time.Minute, "how long to wait for kfed-controller to remove kfed's Services from the member")
	return cmd
}
