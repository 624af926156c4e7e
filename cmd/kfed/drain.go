package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

func newDrainCommand() *cobra.Command {
	return drainCommand(true, "drain CLUSTER [--wait]", "Take a member cluster out of every answer, keeping its workloads",
		`Drain takes a joined cluster out of every answer: every name its Services, Gateways and Ingresses
serve (global, region, zone, its own per-cluster names and SRV) stops answering with its addresses, in
every member's CoreDNS and at every DNS provider, while its copies and workloads stay and the checkers
keep probing them. A name that no other cluster can answer keeps the drained cluster, and its object
says so (condition kfed.io/Drained False, reason OnlyDrainedClusters, and a Warning Event). Failover
routing counts a drained place as unavailable. The drain is spec.drained on the Cluster; its Drained
condition and kfed status show it. --wait returns once every DNSEndpoint says so and every provider
has published it, and prints how long resolvers may still hold the old answer (the records' TTL).
kfed undrain brings the cluster back.`, `  # take cluster-2 out for an upgrade, and wait until every provider has it
  kfed drain cluster-2 --wait

  # what a client in cluster-1 now gets for the demo Service, and why
  kfed explain demo.default.dev.svc.kfed.test --from cluster-1`)
}

func newUndrainCommand() *cobra.Command {
	return drainCommand(false, "undrain CLUSTER [--wait]", "Bring a drained member cluster back into every answer",
		`Undrain brings a cluster taken out by kfed drain back into every answer (spec.drained false on the
Cluster). --wait returns once every DNSEndpoint says so and every DNS provider has published it, and
prints how long resolvers may still answer without it (the records' TTL).`, `  # bring cluster-2 back after its upgrade
  kfed undrain cluster-2 --wait`)
}

func drainCommand(drain bool, use, short, long, example string) *cobra.Command {
	var (
		kf      kubeconfigFlags
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args:              exactArgs("CLUSTER"),
		ValidArgsFunction: completeClusters(&kf),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			ctx, name, out := cmd.Context(), args[0], cmd.OutOrStdout()
			changed, err := setDrained(ctx, fed, name, drain)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "cluster %s %s\n", name, map[[2]bool]string{
				{true, true}: "drained", {true, false}: "was drained already",
				{false, true}: "undrained", {false, false}: "was not drained",
			}[[2]bool{drain, changed}])
			if !wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			p, err := waitDrain(ctx, fed, name, drain, time.Second/2)
			if err != nil {
				return fmt.Errorf("waiting for the %s of %s: %w", verb(drain), name, err)
			}
			return p.print(out, name, drain, time.Since(start))
		},
	}
	kf.add(cmd, "context")
	cmd.Flags().BoolVar(&wait, "wait", false, "return once every DNSEndpoint and every DNS provider has the change")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

func verb(drain bool) string {
	if drain {
		return "drain"
	}
	return "undrain"
}

// setDrained writes spec.drained on Cluster name; it reports whether it
// changed.
func setDrained(ctx context.Context, fed client.Client, name string, drained bool) (bool, error) {
	var c kfedv1alpha1.Cluster
	if err := fed.Get(ctx, client.ObjectKey{Name: name}, &c); apierrors.IsNotFound(err) {
		return false, fmt.Errorf("no cluster %s is joined to this federation (kfed status lists the members)", name)
	} else if err != nil {
		return false, fmt.Errorf("cluster %s: %w", name, err)
	}
	if c.Spec.Drained == drained {
		return false, nil
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Drained = drained
	if err := fed.Patch(ctx, &c, patch); err != nil {
		return false, fmt.Errorf("writing spec.drained of cluster %s: %w", name, err)
	}
	return true, nil
}

// waitDrain reads kfed's DNSEndpoints every interval until drainProgress
// says the drain (or undrain) of cluster is published everywhere, or ctx
// ends; then the error names what is still pending.
func waitDrain(ctx context.Context, fed client.Client, cluster string, drained bool, interval time.Duration) (drainState, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last drainState
	for {
		var list extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &list, client.MatchingLabels(dnsendpoint.Selector(""))); err != nil && ctx.Err() == nil {
			return last, fmt.Errorf("listing DNSEndpoints: %w", err)
		}
		if ctx.Err() == nil {
			last = drainProgress(list.Items, cluster, drained)
			if last.done() {
				return last, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("%w; still pending: %s", ctx.Err(), last.pending())
		case <-tick.C:
		}
	}
}

// drainState is how far the drain (or undrain) of one cluster has got, as
// kfed's DNSEndpoints tell it.
type drainState struct {
	// objects are the DNSEndpoints with a row of the cluster; kept those
	// that keep it drained because no other cluster can answer.
	objects, kept []string
	// unwritten are the DNSEndpoints whose table does not say so yet: the
	// controller has not reconciled them since.
	unwritten []string
	// unpublished are "object (provider)" for each provider that has not
	// published an object's current records.
	unpublished []string
	// providers are those that publish the federation's DNSEndpoints.
	providers []string
	// ttl is the longest TTL of the objects' records, seconds.
	ttl int64
}

func (s drainState) done() bool { return len(s.unwritten) == 0 && len(s.unpublished) == 0 }

func (s drainState) pending() string {
	var out []string
	if len(s.unwritten) > 0 {
		out = append(out, "not yet written by the controller: "+strings.Join(s.unwritten, ", "))
	}
	if len(s.unpublished) > 0 {
		out = append(out, "not yet published: "+strings.Join(s.unpublished, ", "))
	}
	return cmp.Or(strings.Join(out, "; "), "nothing")
}

// drainProgress judges eps, kfed's DNSEndpoints, for the drain (drained
// true) or undrain of cluster: each one with a row of the cluster must have
// that row say so, and every provider that publishes its federation must
// have published its generation. A DNSEndpoint whose records did not change
// (one that keeps the cluster) keeps its generation, so it is not waited
// on.
func drainProgress(eps []extdnsv1alpha1.DNSEndpoint, cluster string, drained bool) drainState {
	var s drainState
	providers := map[string][]string{} // federation → providers
	for _, ep := range eps {
		fed := ep.Labels[kfedv1alpha1.LabelFederation]
		for _, p := range ep.Status.Publishers {
			if !slices.Contains(providers[fed], p.Provider) {
				providers[fed] = append(providers[fed], p.Provider)
			}
			if !slices.Contains(s.providers, p.Provider) {
				s.providers = append(s.providers, p.Provider)
			}
		}
	}
	for i := range eps {
		ep := &eps[i]
		table, _ := dnsendpoint.ReadClusters(ep) // what cannot be read has no row to wait on
		row := table[cluster]
		if row == nil {
			continue
		}
		key := ep.Namespace + "/" + ep.Name
		s.objects = append(s.objects, key)
		if row.Drained != drained {
			s.unwritten = append(s.unwritten, key)
			continue
		}
		if drained && slices.Contains(publish.Drained(rows(table)).Kept, cluster) {
			s.kept = append(s.kept, key)
		}
		for _, p := range providers[ep.Labels[kfedv1alpha1.LabelFederation]] {
			i := slices.IndexFunc(ep.Status.Publishers, func(ps extdnsv1alpha1.PublisherStatus) bool { return ps.Provider == p })
			if i < 0 || ep.Status.Publishers[i].ObservedGeneration < ep.Generation {
				s.unpublished = append(s.unpublished, fmt.Sprintf("%s (%s)", key, p))
			}
		}
		for _, e := range ep.Spec.Endpoints {
			s.ttl = max(s.ttl, cmp.Or(e.RecordTTL, publish.DefaultTTL))
		}
	}
	for _, l := range [][]string{s.objects, s.kept, s.unwritten, s.unpublished, s.providers} {
		slices.Sort(l)
	}
	return s
}

// rows are a cluster table's rows, sorted by name.
func rows(table dnsendpoint.Clusters) []dnsendpoint.Cluster {
	out := make([]dnsendpoint.Cluster, 0, len(table))
	for _, c := range table {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b dnsendpoint.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// print tells what --wait saw: how many objects changed, where, in how
// long, what a drain kept, and how long resolvers may still hold the old
// answer.
func (s drainState) print(w io.Writer, cluster string, drained bool, took time.Duration) error {
	where := "in every DNSEndpoint, which every member's CoreDNS watches"
	if len(s.providers) > 0 {
		where += ", and published to " + strings.Join(s.providers, ", ")
	}
	fmt.Fprintf(w, "%s of %s %s, in %s: %d object(s) with endpoints there\n",
		verb(drained), cluster, where, took.Round(100*time.Millisecond), len(s.objects))
	if len(s.kept) > 0 {
		fmt.Fprintf(w, "kept in %s, as no other cluster can answer them: %s\n", cluster, strings.Join(s.kept, ", "))
	}
	if len(s.objects) == 0 {
		return nil
	}
	old := "with " + cluster
	if !drained {
		old = "without " + cluster
	}
	_, err := fmt.Fprintf(w, "resolvers may still answer %s for up to %ds (the records' TTL)\n", old, s.ttl)
	return err
}
