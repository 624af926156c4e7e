package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kfed-io/kfed/ops/drain"
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

func drainCommand(drained bool, use, short, long, example string) *cobra.Command {
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
			changed, err := drain.Set(ctx, fed, name, drained)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "cluster %s %s\n", name, map[[2]bool]string{
				{true, true}: "drained", {true, false}: "was drained already",
				{false, true}: "undrained", {false, false}: "was not drained",
			}[[2]bool{drained, changed}])
			if !wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			p, err := drain.Wait(ctx, fed, name, drained, time.Second/2)
			if err != nil {
				return fmt.Errorf("waiting for the %s of %s: %w", verb(drained), name, err)
			}
			return printDrain(out, p, name, drained, time.Since(start))
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

// printDrain tells what --wait saw: how many objects changed, where, in how
// long, what a drain kept, and how long resolvers may still hold the old
// answer.
func printDrain(w io.Writer, s drain.State, cluster string, drained bool, took time.Duration) error {
	where := "in every DNSEndpoint, which every member's CoreDNS watches"
	if len(s.Providers) > 0 {
		where += ", and published to " + strings.Join(s.Providers, ", ")
	}
	fmt.Fprintf(w, "%s of %s %s, in %s: %d object(s) with endpoints there\n",
		verb(drained), cluster, where, took.Round(100*time.Millisecond), len(s.Objects))
	if len(s.Kept) > 0 {
		fmt.Fprintf(w, "kept in %s, as no other cluster can answer them: %s\n", cluster, strings.Join(s.Kept, ", "))
	}
	if len(s.Objects) == 0 {
		return nil
	}
	old := "with " + cluster
	if !drained {
		old = "without " + cluster
	}
	_, err := fmt.Fprintf(w, "resolvers may still answer %s for up to %ds (the records' TTL)\n", old, s.TTL)
	return err
}
