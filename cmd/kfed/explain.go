package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/oschwald/geoip2-golang/v2"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/ops/explain"
)

// explainFlags are kfed explain's flags beyond the kubeconfig's.
type explainFlags struct {
	from, subnet, qtype, geoip, output string
	freshness                          time.Duration
}

func newExplainCommand() *cobra.Command {
	var (
		kf      kubeconfigFlags
		tenancy tenancyFlags
		f       explainFlags
	)
	cmd := &cobra.Command{
		Use:   "explain NAME [--from CLUSTER | --client-subnet CIDR] [--type A|AAAA|SRV]",
		Short: "Show the answer kfed's CoreDNS gives a client for a name now, and why",
		Long: `Explain shows the answer kfed's CoreDNS plugin gives one client for NAME now, and why, step by step:
the DNSEndpoint and object that publish the name and why its namespace may (tenancy), the routing
policy and failover state (order, pin, active place), each cluster's health verdict with every
checker's vote, why a cluster is left out, and the order the clusters are answered in: the asking
CoreDNS's own cluster first, then tiers (zone, region, elsewhere) and round-trip times inside a
cluster, or distances from the client at the edge, and weights within a group of equally near
clusters, whose order is drawn anew for each query. A name that is an alias (a place with no serving
cluster) is followed to its target. Last, what each DNS provider has published of the object.

It computes the answer with the plugin's own code (its index, ordering and tenancy rule), from the
same DNSEndpoints and round-trip times the plugin reads, so that it matches dig.

--from CLUSTER asks that member's CoreDNS (the plugin with cluster CLUSTER). Without --from it asks the
edge CoreDNS (the plugin of no cluster); --client-subnet CIDR is the client's subnet, as a resolver
sends it in EDNS Client Subnet, which the edge places with its GeoIP2 City database (--geoip, default
$KFED_GEOIP; kfed dev up writes it to DIR/geoip.mmdb). For a Service whose weights follow loads, a subnet
gets a draw of its own among equally near clusters, the same at every query while the weights hold: the
answer shown is that subnet's.`,
		Example: `  # the answer cluster-1's CoreDNS gives for the dev bed's demo Service
  kfed explain demo.default.dev.svc.kfed.test --from cluster-1

  # a client in Tokyo at the dev bed's edge CoreDNS, as JSON
  kfed explain demo.default.dev.svc.kfed.test --client-subnet 203.0.113.0/24 --geoip .kfed-dev/geoip.mmdb -o json

  # the SRV records of the demo Service's http port
  kfed explain _http._tcp.demo.default.dev.svc.kfed.test --type SRV --from cluster-2`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := f.query(args[0])
			if err != nil {
				return err
			}
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			e, err := runExplain(cmd.Context(), fed, q, &f, tenancy.trusted)
			if err != nil {
				return err
			}
			return printExplanation(cmd.OutOrStdout(), e, f.output)
		},
	}
	kf.add(cmd, "context")
	tenancy.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "the member cluster whose CoreDNS is asked")
	fl.StringVar(&f.subnet, "client-subnet", "", "the client's subnet at the edge CoreDNS (EDNS Client Subnet), e.g. 203.0.113.0/24")
	fl.StringVar(&f.qtype, "type", "A", "the query type: A, AAAA or SRV")
	fl.StringVar(&f.geoip, "geoip", os.Getenv("KFED_GEOIP"), "the edge CoreDNS's GeoIP2 City database, for --client-subnet (default $KFED_GEOIP)")
	fl.StringVarP(&f.output, "output", "o", "text", "text, json or yaml")
	fl.DurationVar(&f.freshness, "health-freshness", 0, "how long a checker's heartbeat counts, as the controller's --health-freshness (default 40s)")
	return cmd
}

// query checks the flags and turns them into the question, placing the
// client subnet with the GeoIP database.
func (f *explainFlags) query(name string) (explain.Query, error) {
	q := explain.Query{Name: name, From: f.from}
	if f.output != "text" && f.output != "json" && f.output != "yaml" {
		return q, fmt.Errorf("--output must be text, json or yaml, not %q", f.output)
	}
	switch t := strings.ToUpper(f.qtype); t {
	case "A", "AAAA", "SRV":
		q.Type = dns.StringToType[t]
	default:
		return q, fmt.Errorf("--type must be A, AAAA or SRV, not %q", f.qtype)
	}
	if f.subnet == "" {
		return q, nil
	}
	if f.from != "" {
		return q, errors.New("give --from CLUSTER (a member's CoreDNS) or --client-subnet CIDR (a client at the edge CoreDNS), not both")
	}
	p, err := netip.ParsePrefix(f.subnet)
	if err != nil {
		if a, aerr := netip.ParseAddr(f.subnet); aerr == nil {
			p = netip.PrefixFrom(a, a.BitLen())
		} else {
			return q, fmt.Errorf("--client-subnet %q is not a subnet such as 203.0.113.0/24: %w", f.subnet, err)
		}
	}
	q.Subnet = p.Masked()
	if f.geoip == "" {
		return q, errors.New("--client-subnet needs the edge CoreDNS's GeoIP2 City database: give --geoip FILE or set KFED_GEOIP (kfed dev up writes DIR/geoip.mmdb)")
	}
	q.Location, err = locate(f.geoip, q.Subnet.Addr())
	return q, err
}

// locate places addr, the subnet's address as CoreDNS's geoip plugin reads
// it from EDNS Client Subnet, with the database at path; nil when the
// database places it nowhere.
func locate(path string, addr netip.Addr) (*geo.Point, error) {
	db, err := geoip2.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--geoip %s: %w", path, err)
	}
	defer db.Close()
	c, err := db.City(addr)
	if err != nil {
		return nil, fmt.Errorf("--geoip %s: looking up %s: %w", path, addr, err)
	}
	if !c.Location.HasCoordinates() {
		return nil, nil
	}
	p := geo.Point{Latitude: *c.Location.Latitude, Longitude: *c.Location.Longitude}
	if p.Check() != nil {
		return nil, nil // as the plugin, which ignores a place that is none
	}
	return &p, nil
}

// runExplain reads what the answer depends on from the control plane and
// explains it.
func runExplain(ctx context.Context, fed client.Client, q explain.Query, f *explainFlags, trusted []string) (*explain.Explanation, error) {
	var list extdnsv1alpha1.DNSEndpointList
	if err := fed.List(ctx, &list, client.MatchingLabels(dnsendpoint.Selector(""))); err != nil {
		return nil, fmt.Errorf("listing DNSEndpoints: %w", err)
	}
	federation, err := federationOf(list.Items, q.Name)
	if err != nil {
		return nil, err
	}
	w := explain.World{Federation: federation, Trusted: trusted, TTL: 30,
		Owner: func(ep *extdnsv1alpha1.DNSEndpoint) (explain.Owner, bool) { return ownerOf(ctx, fed, ep) }}
	for _, ep := range list.Items {
		if ep.Labels[kfedv1alpha1.LabelFederation] == federation {
			w.Endpoints = append(w.Endpoints, ep)
		}
	}
	if q.From != "" {
		var c kfedv1alpha1.Cluster
		if err := fed.Get(ctx, client.ObjectKey{Name: q.From}, &c); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("--from %s: no such member cluster (kfed status lists them)", q.From)
			}
			return nil, fmt.Errorf("--from %s: %w", q.From, err)
		}
	}
	var reports kfedv1alpha1.HealthReportList
	if err := fed.List(ctx, &reports, client.InNamespace(kfedv1alpha1.DefaultNamespace),
		client.MatchingLabels{kfedv1alpha1.LabelFederation: federation}); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing health reports: %w", err)
	}
	w.Reports = reports.Items
	if w.Health, err = publish.ReadHealth(ctx, fed, federation, time.Now(), f.freshness); err != nil {
		return nil, err
	}
	return explain.Explain(q, w, nil)
}

// federationOf is the federation whose DNSEndpoints have name.
func federationOf(eps []extdnsv1alpha1.DNSEndpoint, name string) (string, error) {
	fqdn := dns.Fqdn(strings.ToLower(name))
	var feds []string
	for _, ep := range eps {
		for _, e := range ep.Spec.Endpoints {
			if dns.Fqdn(strings.ToLower(e.DNSName)) == fqdn {
				if f := ep.Labels[kfedv1alpha1.LabelFederation]; !slices.Contains(feds, f) {
					feds = append(feds, f)
				}
			}
		}
	}
	switch len(feds) {
	case 0:
		return "", fmt.Errorf("no DNSEndpoint has %s: a federated Service's names are SERVICE.NAMESPACE.FEDERATION.svc.DOMAIN and its region, zone, cluster and SRV names (kfed dns plan -A lists every name)", strings.TrimSuffix(fqdn, "."))
	case 1:
		return feds[0], nil
	}
	slices.Sort(feds)
	return "", fmt.Errorf("%s is published by the DNSEndpoints of several federations (%s): explain reads one control plane's; give --context of the one you mean", strings.TrimSuffix(fqdn, "."), strings.Join(feds, ", "))
}

// ownerOf reads the metadata of the federated object ep publishes: its
// controller in ep's namespace, or the Gateway or Ingress its
// kfedv1alpha1.AnnotationHostnamesOf names ("Kind namespace/name"), which kfed
// publishes from its own namespace.
func ownerOf(ctx context.Context, fed client.Client, ep *extdnsv1alpha1.DNSEndpoint) (explain.Owner, bool) {
	var (
		gvk schema.GroupVersionKind
		key client.ObjectKey
	)
	if ref := metav1.GetControllerOf(ep); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return explain.Owner{}, false
		}
		gvk, key = gv.WithKind(ref.Kind), client.ObjectKey{Namespace: ep.Namespace, Name: ref.Name}
	} else {
		kind, nn, _ := strings.Cut(ep.Annotations[kfedv1alpha1.AnnotationHostnamesOf], " ")
		ns, name, ok := strings.Cut(nn, "/")
		origins := map[string]schema.GroupVersionKind{
			"Gateway": {Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"},
			"Ingress": {Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		}
		if gvk, ok = origins[kind]; !ok || ns == "" || name == "" {
			return explain.Owner{}, false
		}
		key = client.ObjectKey{Namespace: ns, Name: name}
	}
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(gvk)
	if err := fed.Get(ctx, key, &m); err != nil {
		return explain.Owner{}, false
	}
	return explain.Owner{Kind: gvk.Kind, Namespace: key.Namespace, Name: key.Name, Annotations: m.Annotations}, true
}

// printExplanation writes e as text, JSON or YAML.
func printExplanation(w io.Writer, e *explain.Explanation, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	case "yaml":
		b, err := yaml.Marshal(e)
		if err != nil {
			return fmt.Errorf("printing YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	_, err := io.WriteString(w, e.String())
	return err
}
