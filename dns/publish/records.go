package publish

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// DefaultTTL is the record TTL when a Service does not set kfed.io/ttl.
const DefaultTTL = serviceconfig.DefaultTTL

// Names are the DNS names of one federated Service.
type Names = dnsendpoint.Names

// NewNames returns the names of Service namespace/service in federation
// under domain.
func NewNames(federation, domain, namespace, service string) Names {
	return dnsendpoint.NewNames(federation, domain, namespace, service)
}

// Input is everything the records of one Service depend on.
type Input struct {
	Names Names
	TTL   int64
	// Clusters the Service is placed in and that have an endpoint, as
	// rows of the DNSEndpoint's cluster table; a cluster without ingress is
	// left out.
	Clusters []dnsendpoint.Cluster
	// Regions and Zones lists every region and zone (as "zone/region") of the
	// federation's clusters, so that a place with no endpoint still gets its
	// CNAME fallback.
	Regions []string
	Zones   []string
	// Serving, when not nil, are the clusters that may answer the shared
	// names (global, region, zone, SRV): those of the active place of a
	// failover order. Every other cluster keeps its own name only.
	Serving map[string]bool
}

// Endpoints computes the desired DNS records of one Service: A and AAAA at
// the global, region, zone and cluster names, one endpoint per name and type
// holding the addresses of every cluster there; CNAME fallbacks zone → region
// → global where a place has no healthy endpoint; SRV per named port. An
// unhealthy shard, one shed for its load, or one outside in.Serving (a
// passive place of a failover order), answers only at its own cluster name
// — unless no shard is healthy, when the global name and SRV keep them all
// (fail open, as Route53 does) and regions and zones fall back to the
// global name. Beside the
// records it returns the cluster table (dnsendpoint.Cluster) that tells
// kfed's readers which cluster each address is, its weight, cluster IPs and
// verdict. A drained cluster answers at no name, its own neither, unless
// every cluster that could answer is drained (Drained); its row stays in
// the table. The result is sorted, so equal inputs give equal outputs.
func Endpoints(in Input) ([]extdnsv1alpha1.Endpoint, []dnsendpoint.Cluster, error) {
	if err := validateNames(in); err != nil {
		return nil, nil, err
	}
	n := in.Names
	out := endpoints{ttl: cmp.Or(in.TTL, DefaultTTL)}
	rows := slices.Clone(in.Clusters)
	slices.SortFunc(rows, func(a, b dnsendpoint.Cluster) int { return strings.Compare(a.Name, b.Name) })
	shards := Drained(rows).Live

	serving := filter(shards, func(s dnsendpoint.Cluster) bool {
		return !s.Unhealthy && !s.Shed && (in.Serving == nil || in.Serving[s.Name])
	})
	global := serving
	if len(serving) == 0 {
		global = shards // fail open
	}
	out.addresses(n.Global(), global)
	for _, s := range shards {
		out.addresses(n.Cluster(s.Name), []dnsendpoint.Cluster{s})
	}
	for _, r := range sortedUnique(in.Regions) {
		at := filter(serving, func(s dnsendpoint.Cluster) bool { return s.Region == r })
		if len(at) == 0 {
			out.add(n.Region(r), "CNAME", []string{n.Global()})
			continue
		}
		out.addresses(n.Region(r), at)
	}
	for _, zr := range sortedUnique(in.Zones) {
		z, r, _ := strings.Cut(zr, "/")
		at := filter(serving, func(s dnsendpoint.Cluster) bool { return s.Region == r && slices.Contains(s.Zones, z) })
		if len(at) == 0 {
			out.add(n.Zone(z, r), "CNAME", []string{n.Region(r)})
			continue
		}
		out.addresses(n.Zone(z, r), at)
	}
	out.srv(n, global)
	slices.SortFunc(out.list, func(a, b extdnsv1alpha1.Endpoint) int {
		return cmp.Or(strings.Compare(a.DNSName, b.DNSName), strings.Compare(a.RecordType, b.RecordType))
	})
	return out.list, table(rows), nil
}

// table is the cluster table of rows, in name order (row).
func table(rows []dnsendpoint.Cluster) []dnsendpoint.Cluster {
	out := make([]dnsendpoint.Cluster, len(rows))
	for i, s := range rows {
		out[i] = row(s)
	}
	slices.SortFunc(out, func(a, b dnsendpoint.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// endpoints collects one Service's endpoints, each with the Service's TTL.
type endpoints struct {
	ttl  int64
	list []extdnsv1alpha1.Endpoint
}

func (e *endpoints) add(name, typ string, targets []string) {
	e.list = append(e.list, extdnsv1alpha1.Endpoint{DNSName: name, RecordType: typ, Targets: targets, RecordTTL: e.ttl})
}

// addresses publishes the shards at name: the addresses of all of them in
// one A and one AAAA endpoint, or a CNAME when the name's sole target is
// one hostname ingress (a CNAME cannot share its name, so only then).
func (e *endpoints) addresses(name string, at []dnsendpoint.Cluster) {
	if len(at) == 1 && at[0].Hostname != "" {
		e.add(name, "CNAME", []string{at[0].Hostname})
		return
	}
	var ips []netip.Addr
	for _, s := range at {
		ips = append(ips, s.Addresses...)
	}
	e.list = append(e.list, AddressEndpoints(name, ips, e.ttl)...)
}

// AddressEndpoints publishes addrs at name: one A endpoint with the IPv4
// addresses and one AAAA endpoint with the IPv6 ones, each sorted and
// unique, and none for a family without an address. Every record kfed
// publishes at an address splits the families this way.
func AddressEndpoints(name string, addrs []netip.Addr, ttl int64) []extdnsv1alpha1.Endpoint {
	var out []extdnsv1alpha1.Endpoint
	v4, v6 := split(addrs)
	if len(v4) > 0 {
		out = append(out, extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: v4, RecordTTL: ttl})
	}
	if len(v6) > 0 {
		out = append(out, extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "AAAA", Targets: v6, RecordTTL: ttl})
	}
	return out
}

// srv publishes an SRV endpoint per named port of the shards at, each
// target a shard's per-cluster name with its weight.
func (e *endpoints) srv(n Names, at []dnsendpoint.Cluster) {
	for _, p := range srvPorts(at) {
		var targets []string
		for _, s := range at {
			for _, sp := range s.Ports {
				if sp.Name == p.Name && strings.EqualFold(sp.Protocol, p.Protocol) {
					t := dnsprovider.SRV{Weight: dnsendpoint.SRVWeight(s.Weight), Port: uint16(sp.Port), Target: n.Cluster(s.Name)}
					targets = append(targets, t.String())
				}
			}
		}
		e.add(n.SRV(p.Name, p.Protocol), "SRV", targets)
	}
}

// row is a cluster as the DNSEndpoint's cluster table holds it: addresses
// sorted and unique, every port with its protocol.
func row(c dnsendpoint.Cluster) dnsendpoint.Cluster {
	c.Addresses, c.ClusterIPs = SortedAddrs(c.Addresses), SortedAddrs(c.ClusterIPs)
	ports := make([]dnsendpoint.Port, len(c.Ports))
	for i, p := range c.Ports {
		ports[i] = dnsendpoint.Port{Name: p.Name, Protocol: cmp.Or(p.Protocol, "TCP"), Port: p.Port}
	}
	c.Ports = ports
	return c
}

// SortedAddrs returns addrs unmapped (an IPv4 address in IPv6 form is an
// IPv4 address), sorted and unique.
func SortedAddrs(addrs []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, a.Unmap())
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// split returns the IPv4 and IPv6 addresses of ips as sorted, unique strings.
func split(ips []netip.Addr) (v4, v6 []string) {
	for _, a := range SortedAddrs(ips) {
		if a.Is4() {
			v4 = append(v4, a.String())
		} else {
			v6 = append(v6, a.String())
		}
	}
	return v4, v6
}

// srvPorts lists the distinct named ports of the shards.
func srvPorts(shards []dnsendpoint.Cluster) []dnsendpoint.Port {
	var ports []dnsendpoint.Port
	for _, s := range shards {
		for _, p := range s.Ports {
			if p.Name == "" {
				continue
			}
			if !slices.ContainsFunc(ports, func(q dnsendpoint.Port) bool { return q.Name == p.Name && strings.EqualFold(q.Protocol, p.Protocol) }) {
				ports = append(ports, dnsendpoint.Port{Name: p.Name, Protocol: cmp.Or(p.Protocol, "TCP")})
			}
		}
	}
	slices.SortFunc(ports, func(a, b dnsendpoint.Port) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Protocol, b.Protocol))
	})
	return ports
}

// validateNames rejects a Service whose names DNS cannot hold: a label over
// 63 octets or a name over 253.
func validateNames(in Input) error {
	n := in.Names
	names := []string{n.Global()}
	for _, s := range in.Clusters {
		names = append(names, n.Cluster(s.Name))
		for _, p := range s.Ports {
			if p.Name != "" {
				names = append(names, n.SRV(p.Name, cmp.Or(p.Protocol, "TCP")))
			}
		}
	}
	for _, r := range in.Regions {
		names = append(names, n.Region(r))
	}
	for _, zr := range in.Zones {
		z, r, _ := strings.Cut(zr, "/")
		names = append(names, n.Zone(z, r))
	}
	for _, name := range names {
		if len(name) > 253 {
			return fmt.Errorf("DNS name %s is %d octets long, over DNS's 253", name, len(name))
		}
		for _, label := range strings.Split(name, ".") {
			if len(label) > 63 {
				return fmt.Errorf("DNS name %s has a label of %d octets, over DNS's 63: %q", name, len(label), label)
			}
			if len(label) == 0 {
				return fmt.Errorf("DNS name %s has an empty label", name)
			}
		}
		for _, msg := range validation.IsDNS1123Subdomain(strings.TrimPrefix(strings.ReplaceAll(name, "._", "."), "_")) {
			return fmt.Errorf("DNS name %s: %s", name, msg)
		}
	}
	return nil
}

func filter(shards []dnsendpoint.Cluster, keep func(dnsendpoint.Cluster) bool) []dnsendpoint.Cluster {
	var out []dnsendpoint.Cluster
	for _, s := range shards {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
