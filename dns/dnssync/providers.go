package dnssync

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	awsroute53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/dns/dnsprovider/route53"
)

// ProviderFlags select and configure a provider, with ExternalDNS's flag
// names. Both `kfed dns sync` and kfed-controller bind them.
type ProviderFlags struct {
	Provider  string
	OwnerID   string
	TXTPrefix string

	RFC2136Host, RFC2136Zone                  string
	RFC2136Port                               int
	RFC2136KeyName, RFC2136Alg, RFC2136Secret string

	Route53ZoneID, Route53Endpoint string
	AWSAssumeRole                  string

	GoogleProject, GoogleZone string
}

// AddFlags binds the flags to fs.
func (f *ProviderFlags) AddFlags(fs *flag.FlagSet, providerFlag string) {
	fs.StringVar(&f.Provider, providerFlag, "", "DNS provider to publish to: route53, clouddns or rfc2136")
	fs.StringVar(&f.OwnerID, "owner-id", "kfed", "this federation's ownership mark; federations sharing a zone need different ones")
	fs.StringVar(&f.TXTPrefix, "txt-prefix", dnsprovider.DefaultTXTPrefix, "prefix of the ownership TXT record names (ends in a dot)")
	fs.StringVar(&f.RFC2136Host, "rfc2136-host", "", "RFC 2136: primary server host")
	fs.IntVar(&f.RFC2136Port, "rfc2136-port", 53, "RFC 2136: server port")
	fs.StringVar(&f.RFC2136Zone, "rfc2136-zone", "", "RFC 2136: zone to update")
	fs.StringVar(&f.RFC2136KeyName, "rfc2136-tsig-keyname", "", "RFC 2136: TSIG key name")
	fs.StringVar(&f.RFC2136Alg, "rfc2136-tsig-secret-alg", "hmac-sha256", "RFC 2136: TSIG algorithm")
	fs.StringVar(&f.RFC2136Secret, "rfc2136-tsig-secret-file", "", "RFC 2136: file holding the base64 TSIG secret (never the secret itself)")
	fs.StringVar(&f.Route53ZoneID, "route53-zone-id", "", "Route53: only this hosted zone (default: every zone the credentials see)")
	fs.StringVar(&f.Route53Endpoint, "route53-endpoint", "", "Route53: API endpoint URL (default AWS's)")
	fs.StringVar(&f.AWSAssumeRole, "aws-assume-role", "", "Route53: ARN of a role to assume with the default credentials (another account's zones)")
	fs.StringVar(&f.GoogleProject, "google-project", "", "Cloud DNS: project (default: the one of the application default credentials)")
	fs.StringVar(&f.GoogleZone, "google-zone", "", "Cloud DNS: only this managed zone (name, ID or DNS name; default every zone)")
}

// Check refuses what New would refuse of the flags alone, without reading
// credentials or reaching the provider, so that a command can refuse its
// flags before it reads anything.
func (f *ProviderFlags) Check() error {
	if _, err := dnsprovider.NewRegistry(f.OwnerID, f.TXTPrefix); err != nil {
		return err
	}
	switch f.Provider {
	case "rfc2136":
		if f.RFC2136Host == "" || f.RFC2136Zone == "" {
			return errors.New("provider rfc2136 needs --rfc2136-host and --rfc2136-zone")
		}
	case "route53", "clouddns":
	case "":
		return errors.New("no provider given: --provider route53, clouddns or rfc2136")
	default:
		return fmt.Errorf("unknown provider %q: --provider route53, clouddns or rfc2136", f.Provider)
	}
	return nil
}

// New builds the provider and the planner its ownership registry needs.
func (f *ProviderFlags) New(ctx context.Context) (dnsprovider.Provider, dnsprovider.Planner, error) {
	if err := f.Check(); err != nil {
		return nil, dnsprovider.Planner{}, err
	}
	reg, err := dnsprovider.NewRegistry(f.OwnerID, f.TXTPrefix)
	if err != nil {
		return nil, dnsprovider.Planner{}, err
	}
	pl := dnsprovider.Planner{Registry: reg}
	switch f.Provider {
	case "rfc2136":
		p, err := rfc2136.New(rfc2136.Config{
			Server: net.JoinHostPort(f.RFC2136Host, strconv.Itoa(f.RFC2136Port)), Zones: []string{f.RFC2136Zone},
			TSIGKeyName: f.RFC2136KeyName, TSIGAlgorithm: f.RFC2136Alg, TSIGSecretFile: f.RFC2136Secret,
		})
		return p, pl, err
	case "route53":
		// Credentials come from the default chain: environment, shared
		// files, web identity (IRSA), instance role.
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, pl, fmt.Errorf("loading AWS credentials: %w", err)
		}
		if f.AWSAssumeRole != "" {
			cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), f.AWSAssumeRole))
		}
		c := awsroute53.NewFromConfig(cfg, func(o *awsroute53.Options) {
			if f.Route53Endpoint != "" {
				o.BaseEndpoint = aws.String(f.Route53Endpoint)
			}
		})
		var ids []string
		if f.Route53ZoneID != "" {
			ids = []string{f.Route53ZoneID}
		}
		return route53.New(c, route53.Config{ZoneIDs: ids}), pl, nil
	case "clouddns":
		// Credentials are Google's application default credentials.
		var zones []string
		if f.GoogleZone != "" {
			zones = []string{f.GoogleZone}
		}
		p, err := clouddns.NewWithDefaultCredentials(ctx, clouddns.Config{Project: f.GoogleProject, Zones: zones})
		return p, pl, err
	}
	return nil, pl, fmt.Errorf("unknown provider %q: route53, clouddns or rfc2136", f.Provider)
}
