package main

// kfed check: the installation's health as a list of checks, read and
// judged by package check; here the flags and the printing.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/ops/check"
)

// checkFlags are the flags of `kfed check`.
type checkFlags struct {
	kf         kubeconfigFlags
	pre        bool
	output     outputFlag
	namespace  string
	federation string
	domain     string
	dns        []string
}

func newCheckCommand() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check [--pre] [-o table|json]",
		Short: "Check that the installation is healthy (or, with --pre, that it can be installed)",
		Long: `Check runs a list of checks and prints each one's outcome (pass, warn or fail), a one-line reason and,
for a warning or a failure, a hint how to fix it: kfed's CRDs, the controller's Lease and version, every
member Ready and when its credentials expire, each member's CoreDNS answering the zone's SOA and a
published name, each member's cluster DNS forwarding the zone, the checkers' quorum, and what each DNS
provider has published and left alone. It exits non-zero when a check fails.

With --pre it checks only what an install needs: the control plane answers, its version, the right to
create CRDs and cluster roles, and kfed's namespace.

A member's CoreDNS is found at --dns CLUSTER=ADDR, else at $KFED_DNS_CLUSTER_i (the i-th member of
` + "`kfed dev up`" + `, cluster-i), else at the member's kfed-system/kfed-coredns Service. The zone is --domain,
else $KFED_DOMAIN.`,
		Example: `  # Before installing the chart: may this context install kfed?
  kfed check --pre --context federation

  # After: is every part of the installation working?
  kfed check --context federation --domain global.example.com`,
		Args: maxArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.output.validate(); err != nil {
				return err
			}
			dns, err := dnsAddrs(f.dns, os.Environ())
			if err != nil {
				return err
			}
			results := f.run(cmd.Context(), dns)
			if err := printChecks(cmd.OutOrStdout(), results, f.output.value); err != nil {
				return err
			}
			if n := check.Count(results, check.Fail); n > 0 {
				return fmt.Errorf("%d of %d checks failed", n, len(results))
			}
			return nil
		},
	}
	f.kf.add(cmd, "context")
	cmd.Flags().BoolVar(&f.pre, "pre", false, "check only what an install needs")
	f.output.add(cmd, "table", "wide", "json", "yaml")
	cmd.Flags().StringVar(&f.namespace, "namespace", kfedv1alpha1.DefaultNamespace, "kfed's namespace in the control plane and the members")
	cmd.Flags().StringVar(&f.federation, "federation", os.Getenv("KFED_FEDERATION"), "the federation whose checkers count (default $KFED_FEDERATION; empty: every checker)")
	cmd.Flags().StringVar(&f.domain, "domain", os.Getenv("KFED_DOMAIN"), "the federation's DNS zone (default $KFED_DOMAIN)")
	cmd.Flags().StringArrayVar(&f.dns, "dns", nil, "CLUSTER=ADDR: where the member's CoreDNS answers (repeatable)")
	return cmd
}

// run checks what the flags say; a kubeconfig that cannot be read is
// the one failing check.
func (f *checkFlags) run(ctx context.Context, dns map[string]string) []check.Result {
	_, cfg, name, err := f.kf.config()
	if err != nil {
		return []check.Result{{Name: "api", Status: check.Fail, Message: err.Error(), Hint: "give --kubeconfig and --context"}}
	}
	return check.Run(ctx, check.Options{Config: cfg, Context: name, Pre: f.pre, Namespace: f.namespace,
		Federation: f.federation, Domain: f.domain, DNS: dns})
}

// dnsAddrs are the members' CoreDNS addresses the user gave: each
// KFED_DNS_CLUSTER_i of env as cluster-i's (the names `kfed dev up` gives),
// then each --dns flag, which wins.
func dnsAddrs(flags, env []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if i, ok := strings.CutPrefix(k, "KFED_DNS_CLUSTER_"); ok && v != "" {
			if _, err := strconv.Atoi(i); err == nil {
				out["cluster-"+i] = v
			}
		}
	}
	for _, f := range flags {
		c, a, ok := strings.Cut(f, "=")
		if !ok || c == "" || a == "" {
			return nil, fmt.Errorf("--dns %q: want CLUSTER=ADDR", f)
		}
		out[c] = a
	}
	return out, nil
}

// printChecks writes the results as a table (wide is the same: every
// column is in it), then the hints of the
// warnings and failures and a summary line; or as a JSON list.
func printChecks(w io.Writer, results []check.Result, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	case "yaml":
		b, err := yaml.Marshal(results)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	rows := make([]string, len(results))
	for i, r := range results {
		rows[i] = fmt.Sprintf("%s\t%s\t%s", r.Name, r.Status, r.Message)
	}
	if err := printTable(w, "CHECK\tSTATUS\tMESSAGE", rows); err != nil {
		return err
	}
	var hints []string
	for _, r := range results {
		if r.Status != check.Pass && r.Hint != "" {
			hints = append(hints, fmt.Sprintf("  %s: %s", r.Name, r.Hint))
		}
	}
	if len(hints) > 0 {
		fmt.Fprintf(w, "\nTo fix:\n%s\n", strings.Join(hints, "\n"))
	}
	_, err := fmt.Fprintf(w, "\n%d passed, %d warnings, %d failed\n",
		check.Count(results, check.Pass), check.Count(results, check.Warn), check.Count(results, check.Fail))
	return err
}
