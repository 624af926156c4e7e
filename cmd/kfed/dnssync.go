package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awsroute53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dnsprovider"
	"github.com/kfed-io/kfed/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/dnsprovider/route53"
	"github.com/kfed-io/kfed/dnssync"
	"github.com/kfed-io/kfed/services"
)

// syncFlags are the flags of `kfed dns sync`; provider flags follow
// ExternalDNS's names.
type syncFlags struct {
	once, dryRun bool
	interval     time.Duration
	provider     string
	federation   string
	ownerID      string
	txtPrefix    string

	rfc2136Host, rfc2136Zone                  string
	rfc2136Port                               int
	rfc2136KeyName, rfc2136Alg, rfc2136Secret string

	route53ZoneID, route53Endpoint string
}

func newDNSSyncCommand() *cobra.Command {
	var (
		kf kubeconfigFlags
		f  syncFlags
	)
	cmd := &cobra.Command{
		Use:   "sync --provider route53|rfc2136 [--once] [--dry-run]",
		Short: "Publish the federation's DNSEndpoints to a DNS provider",
		Long: `Sync reads the DNSEndpoints kfed wrote in the control plane and publishes them to a DNS provider,
touching only names that carry this federation's ownership mark (a TXT record at <txt-prefix><name>).
With --once it syncs once and exits 0 when every zone matches the desired state; with --dry-run it
prints the plan and changes nothing. Without --once it syncs every --interval until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			prov, err := f.newProvider(cmd.Context())
			if err != nil {
				return err
			}
			reg, err := dnsprovider.NewRegistry(f.ownerID, f.txtPrefix)
			if err != nil {
				return err
			}
			s := &dnssync.Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: reg}}
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
	fl.StringVar(&f.provider, "provider", "", "route53 or rfc2136")
	fl.StringVar(&f.federation, "federation", "", "publish only this federation's DNSEndpoints (default: all of kfed's)")
	fl.StringVar(&f.ownerID, "owner-id", "kfed", "this federation's ownership mark; federations sharing a zone need different ones")
	fl.StringVar(&f.txtPrefix, "txt-prefix", dnsprovider.DefaultTXTPrefix, "prefix of the ownership TXT record names (ends in a dot)")
	fl.StringVar(&f.rfc2136Host, "rfc2136-host", "", "RFC 2136: primary server host")
	fl.IntVar(&f.rfc2136Port, "rfc2136-port", 53, "RFC 2136: server port")
	fl.StringVar(&f.rfc2136Zone, "rfc2136-zone", "", "RFC 2136: zone to update")
	fl.StringVar(&f.rfc2136KeyName, "rfc2136-tsig-keyname", "", "RFC 2136: TSIG key name")
	fl.StringVar(&f.rfc2136Alg, "rfc2136-tsig-secret-alg", "hmac-sha256", "RFC 2136: TSIG algorithm")
	fl.StringVar(&f.rfc2136Secret, "rfc2136-tsig-secret-file", "", "RFC 2136: file holding the base64 TSIG secret (never the secret itself)")
	fl.StringVar(&f.route53ZoneID, "route53-zone-id", "", "Route53: only this hosted zone (default: every zone the credentials see)")
	fl.StringVar(&f.route53Endpoint, "route53-endpoint", "", "Route53: API endpoint URL (default AWS's)")
	return cmd
}

func (f syncFlags) newProvider(ctx context.Context) (dnsprovider.Provider, error) {
	switch f.provider {
	case "rfc2136":
		if f.rfc2136Host == "" || f.rfc2136Zone == "" {
			return nil, errors.New("--provider rfc2136 needs --rfc2136-host and --rfc2136-zone")
		}
		return rfc2136.New(rfc2136.Config{
			Server: net.JoinHostPort(f.rfc2136Host, strconv.Itoa(f.rfc2136Port)), Zones: []string{f.rfc2136Zone},
			TSIGKeyName: f.rfc2136KeyName, TSIGAlgorithm: f.rfc2136Alg, TSIGSecretFile: f.rfc2136Secret,
		})
	case "route53":
		// Credentials come from the default chain: environment, shared
		// files, web identity, instance role.
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading AWS credentials: %w", err)
		}
		c := awsroute53.NewFromConfig(cfg, func(o *awsroute53.Options) {
			if f.route53Endpoint != "" {
				o.BaseEndpoint = aws.String(f.route53Endpoint)
			}
		})
		var ids []string
		if f.route53ZoneID != "" {
			ids = []string{f.route53ZoneID}
		}
		return route53.New(c, route53.Config{ZoneIDs: ids}), nil
	case "":
		return nil, errors.New("--provider is required: route53 or rfc2136")
	}
	return nil, fmt.Errorf("unknown --provider %q: route53 or rfc2136", f.provider)
}

// syncOnce publishes the current DNSEndpoints once and reports.
func syncOnce(ctx context.Context, out io.Writer, fed client.Client, s *dnssync.Syncer, f syncFlags) error {
	labels := client.MatchingLabels{kfedv1alpha1.LabelManagedBy: "kfed"}
	if f.federation != "" {
		labels[services.LabelFederation] = f.federation
	}
	var list extdnsv1alpha1.DNSEndpointList
	if err := fed.List(ctx, &list, labels); err != nil {
		return fmt.Errorf("listing DNSEndpoints: %w", err)
	}
	before := s.Provider.Stats()
	res, err := s.Sync(ctx, dnssync.Desired(list.Items), f.dryRun)
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
	return errors.Join(errs...)
}
