package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnssync"
)

// syncFlags are the flags of `kfed dns sync`.
type syncFlags struct {
	once, dryRun bool
	interval     time.Duration
	federation   string
	provider     dnssync.ProviderFlags
	tenancy      tenancyFlags
}

func newDNSSyncCommand() *cobra.Command {
	var (
		kf kubeconfigFlags
		f  syncFlags
	)
	cmd := &cobra.Command{
		Use:   "sync --provider route53|clouddns|rfc2136 [--once] [--dry-run]",
		Short: "Publish the federation's DNSEndpoints to a DNS provider",
		Long: `Sync reads the DNSEndpoints kfed wrote in the control plane and publishes them to a DNS provider,
touching only names that carry this federation's ownership mark (a TXT record at <txt-prefix><name>).
With --once it syncs once and exits 0 when every zone matches the desired state; with --dry-run it
prints the plan and changes nothing. Without --once it syncs every --interval until interrupted.

Provider flags take ExternalDNS's names where ExternalDNS has the same setting (--rfc2136-host,
--rfc2136-zone, --txt-prefix, --google-project, …); the others are kfed's own (--route53-zone-id,
--rfc2136-tsig-secret-file, --owner-id). Credentials for Route53 and Cloud DNS come from the
environment as the providers' SDKs read them.`,
		Example: `  # Publish to a BIND server once, with a TSIG key read from a file:
  kfed dns sync --once --provider rfc2136 --rfc2136-host 10.0.0.53 --rfc2136-zone example.com \
    --rfc2136-tsig-keyname kfed --rfc2136-tsig-secret-file /etc/kfed/tsig

  # Keep one Route53 hosted zone in sync every minute:
  kfed dns sync --provider route53 --route53-zone-id Z0123456789`,
		Args: maxArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.provider.Check(); err != nil {
				return err
			}
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			prov, planner, err := f.provider.New(cmd.Context())
			if err != nil {
				return err
			}
			s := &dnssync.Syncer{Provider: prov, Planner: planner}
			for {
				err := syncOnce(cmd.Context(), cmd.OutOrStdout(), fed, s, f)
				if f.once || f.dryRun {
					return err
				}
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "kfed dns sync:", err)
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(f.interval):
				}
			}
		},
	}
	kf.add(cmd, "context")
	fl := cmd.Flags()
	fl.BoolVar(&f.once, "once", false, "sync once and exit")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan, change nothing")
	fl.DurationVar(&f.interval, "interval", time.Minute, "time between syncs without --once")
	fl.StringVar(&f.federation, "federation", "", "publish only this federation's DNSEndpoints (default: all of kfed's)")
	f.tenancy.add(cmd)
	provFlags := flag.NewFlagSet("provider", flag.ContinueOnError)
	f.provider.AddFlags(provFlags, "provider")
	fl.AddGoFlagSet(provFlags)
	return cmd
}

// syncOnce publishes the current DNSEndpoints once and reports.
func syncOnce(ctx context.Context, out io.Writer, fed client.Client, s *dnssync.Syncer, f syncFlags) error {
	var list extdnsv1alpha1.DNSEndpointList
	if err := fed.List(ctx, &list, client.MatchingLabels(dnsendpoint.Selector(f.federation))); err != nil {
		return fmt.Errorf("listing DNSEndpoints: %w", err)
	}
	_, refusals := f.tenancy.admit(list.Items)
	printRefusals(out, "kfed dns sync", refusals)
	before := s.Provider.Stats()
	res, err := s.Sync(ctx, f.tenancy.desired(list.Items), f.dryRun)
	if f.dryRun {
		for _, p := range res.Plans {
			fmt.Fprint(out, p.String())
		}
	}
	after := s.Provider.Stats()
	verb := "applied"
	if f.dryRun {
		verb = "planned"
	}
	fmt.Fprintf(out, "kfed dns sync: %s: %d DNSEndpoints, %d changes %s, %d requests, %d throttled retries\n",
		s.Provider.Name(), len(list.Items), res.Changes(), verb, after.Requests-before.Requests, after.ThrottledRetries-before.ThrottledRetries)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, rs := range res.Unplaced {
		errs = append(errs, fmt.Errorf("%s (%s) is in none of the provider's zones", rs.Name, rs.Resource))
	}
	if c := res.Conflicts(); len(c) > 0 {
		for _, cf := range c {
			fmt.Fprintln(out, cf.String())
		}
		errs = append(errs, fmt.Errorf("%d names are held by records kfed does not own and were left alone", len(c)))
	}
	// The rest was published; each name the provider refused is an error.
	for _, r := range res.Refused {
		errs = append(errs, fmt.Errorf("%s (%s) refused: %w", r.Name, strings.Join(r.Resources, ", "), r.Err))
	}
	return errors.Join(errs...)
}
