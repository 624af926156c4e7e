package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/policy/failover"
)

func newDNSCommand() *cobra.Command {
	dns := groupOf(&cobra.Command{
		Use:   "dns",
		Short: "Show and publish the federation's DNS records",
		Example: `  kfed dns plan -A
  kfed dns sync --once --provider route53`,
	})
	dns.AddCommand(newDNSPlanCommand(), newDNSSyncCommand())
	return dns
}

// record is one row of `kfed dns plan`.
type record struct {
	// Service is the federated object the records are of: namespace/name of
	// a Service, or "Gateway namespace/name", "Ingress namespace/name",
	// "ServiceExport namespace/name" (the exports of a LoadBalancer Service
	// in the members).
	Service string `json:"service"`
	Name    string `json:"name"`
	Type    string `json:"type"`
	// Policy is how clients are sent among the name's clusters: weighted,
	// proximity, or failover with the place that serves. An address row of
	// a Service routed by proximity says what Route53 and Cloud DNS publish
	// too: "(geo)" in their geo policy, "(geo, left out: weight 0)", or
	// "(providers: weighted)".
	Policy  string   `json:"policy"`
	Cluster string   `json:"cluster,omitempty"`
	TTL     int64    `json:"ttl"`
	Weight  string   `json:"weight,omitempty"`
	Targets []string `json:"targets"`
}

// newDNSPlanCommand is `kfed dns plan`. It is long because most of it is
// the command's help, examples and flags, which read best in one place.
func newDNSPlanCommand() *cobra.Command {
	var (
		kf            kubeconfigFlags
		namespace     string
		allNamespaces bool
		output        outputFlag
		provider      dnssync.ProviderFlags
		tenancy       tenancyFlags
	)
	cmd := &cobra.Command{
		Use:   "plan [SERVICE]",
		Short: "Print the DNS records kfed wants for a federated or exported Service, or for all",
		Long: `Plan prints the desired DNS records kfed computed for federated Services, Gateways and Ingresses, and
for Services of type LoadBalancer exported from the members with a ServiceExport (their DNSEndpoint objects in
the control plane; an export's rows say "ServiceExport NAMESPACE/NAME"): every name, type, cluster, TTL, weight
and targets.
With --provider it prints instead what a sync would change in that provider's zones (creates, updates,
deletes, and names left alone because kfed does not own them), and changes nothing.
Without SERVICE it prints the records of every federated Service of the namespace (-n, default the
context's namespace), or of all namespaces with -A.`,
		Example: `  # The records of Service demo in namespace default:
  kfed dns plan demo -n default

  # Every namespace's records, as JSON:
  kfed dns plan -A -o json

  # What a sync would change in a BIND zone, changing nothing:
  kfed dns plan -A --provider rfc2136 --rfc2136-host 127.0.0.1 --rfc2136-zone kfed.test`,
		Args:              maxArgs("SERVICE"),
		ValidArgsFunction: completeServices(&kf, &namespace),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			if len(args) == 1 && allNamespaces {
				return fmt.Errorf("give SERVICE with -n NAMESPACE, or -A without SERVICE: not both")
			}
			if provider.Provider != "" {
				// Refuse a wrong provider flag before reading anything.
				if err := provider.Check(); err != nil {
					return err
				}
			}
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			namespace := kf.namespace(namespace)
			var eps []extdnsv1alpha1.DNSEndpoint
			if len(args) == 1 {
				var ep extdnsv1alpha1.DNSEndpoint
				if err := fed.Get(cmd.Context(), client.ObjectKey{Namespace: namespace, Name: args[0]}, &ep); err != nil {
					return fmt.Errorf("records of %s/%s: %w", namespace, args[0], err)
				}
				eps = append(eps, ep)
			} else {
				var list extdnsv1alpha1.DNSEndpointList
				opts := []client.ListOption{client.MatchingLabels(dnsendpoint.Selector(""))}
				if !allNamespaces {
					opts = append(opts, client.InNamespace(namespace))
				}
				if err := fed.List(cmd.Context(), &list, opts...); err != nil {
					return fmt.Errorf("listing DNSEndpoints: %w", err)
				}
				eps = list.Items
			}
			admitted, refusals := tenancy.admit(eps)
			printRefusals(cmd.ErrOrStderr(), "kfed dns plan", refusals)
			if provider.Provider != "" {
				prov, planner, err := provider.New(cmd.Context())
				if err != nil {
					return err
				}
				s := &dnssync.Syncer{Provider: prov, Planner: planner}
				res, err := s.Sync(cmd.Context(), tenancy.desired(eps), true)
				for _, p := range res.Plans {
					fmt.Fprint(cmd.OutOrStdout(), p.String())
				}
				return err
			}
			return printRecords(cmd.OutOrStdout(), toRecords(admitted, geoPlaced(tenancy.desired(eps))), output.value)
		},
	}
	kf.add(cmd, "context")
	addNamespaceFlags(cmd, &kf, &namespace, &allNamespaces, "namespace of the federated and exported Services (default: the context's namespace, else default)")
	output.add(cmd, "table", "wide", "json", "yaml")
	tenancy.add(cmd)
	provFlags := flag.NewFlagSet("provider", flag.ContinueOnError)
	provider.AddFlags(provFlags, "provider")
	cmd.Flags().AddGoFlagSet(provFlags)
	return cmd
}

// geoPlaced returns the record sets of desired that Route53 and Cloud DNS
// publish with their geo routing: what the DNS sync places
// (dnssync.Desired), as the providers ready it (dnsprovider.Proximity).
func geoPlaced(desired []dnsprovider.RecordSet) map[dnsprovider.Key]bool {
	var norm []dnsprovider.RecordSet
	for _, d := range desired {
		if n, err := dnsprovider.Normalize(d); err == nil {
			norm = append(norm, n)
		}
	}
	out := map[dnsprovider.Key]bool{}
	for _, rs := range dnsprovider.Proximity(norm) {
		if rs.Location != nil {
			out[rs.Key()] = true
			out[dnsprovider.Key{Name: rs.Name, Type: rs.Type}] = true // the name and type hold a geo policy
		}
	}
	return out
}

// geoPolicy says, for a row of a Service routed by proximity, what Route53
// and Cloud DNS publish: a geo policy with this cluster, one without it (a
// cluster of weight 0 beside others), or weighted records (region, zone and
// per-cluster names; a name with a cluster kfed cannot place).
func geoPolicy(r record, placed map[dnsprovider.Key]bool) string {
	name := dnsprovider.NormalizeName(r.Name)
	switch {
	case placed[dnsprovider.Key{Name: name, Type: r.Type, SetIdentifier: r.Cluster}]:
		return r.Policy + " (geo)"
	case placed[dnsprovider.Key{Name: name, Type: r.Type}]:
		return r.Policy + " (geo, left out: weight 0)"
	}
	return r.Policy + " (providers: weighted)"
}

// toRecords lists the records of eps, the addresses of each name one row
// per cluster. placed (geoPlaced) tells the rows of Services routed by
// proximity that Route53 and Cloud DNS publish with geo routing.
func toRecords(eps []extdnsv1alpha1.DNSEndpoint, placed map[dnsprovider.Key]bool) []record {
	var out []record
	for i := range eps {
		ep := &eps[i]
		clusters, _ := dnsendpoint.ReadClusters(ep)
		for j := range ep.Spec.Endpoints {
			e := &ep.Spec.Endpoints[j]
			r := record{Service: owner(ep), Name: e.DNSName, Type: e.RecordType, Policy: policy(ep), TTL: e.RecordTTL, Targets: e.Targets}
			if e.RecordType != "A" && e.RecordType != "AAAA" {
				out = append(out, r)
				continue
			}
			groups, _ := clusters.Groups(e)
			for _, g := range groups {
				r := r
				r.Targets = nil
				for _, a := range g.Addrs {
					r.Targets = append(r.Targets, a.String())
				}
				if g.Cluster != nil {
					r.Cluster, r.Weight = g.Cluster.Name, strconv.Itoa(g.Cluster.Weight)
				}
				if dnsendpoint.ByDistance(ep) {
					r.Policy = geoPolicy(r, placed)
				}
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b record) int {
		if c := strings.Compare(a.Service, b.Service); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// owner names the federated object a DNSEndpoint holds the records of: the
// Service of the same name, or the Gateway, Ingress or ServiceExport its
// kfed.io/hostnames-of annotation names.
func owner(ep *extdnsv1alpha1.DNSEndpoint) string {
	if of := ep.Annotations[kfedv1alpha1.AnnotationHostnamesOf]; of != "" {
		return of
	}
	return ep.Namespace + "/" + ep.Name
}

// policy is how a DNSEndpoint's names send clients among its clusters.
func policy(ep *extdnsv1alpha1.DNSEndpoint) string {
	if st, err := failover.ParseState(ep.Annotations[dnsendpoint.AnnotationFailover]); err == nil && ep.Annotations[dnsendpoint.AnnotationFailover] != "" {
		if st.Active == "" {
			return "failover (no place up: all)"
		}
		return "failover: " + st.Active
	}
	if ep.Annotations[dnsendpoint.AnnotationRouting] == dnsendpoint.RoutingProximity {
		return "proximity"
	}
	return "weighted"
}

func printRecords(w io.Writer, recs []record, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(recs)
	case "yaml":
		b, err := yaml.Marshal(recs)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tNAME\tTYPE\tPOLICY\tCLUSTER\tTTL\tWEIGHT\tTARGETS")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Service, r.Name, r.Type, r.Policy, dash(r.Cluster), r.TTL, dash(r.Weight), strings.Join(r.Targets, ","))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
