package gateways

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/hostnames"
	"github.com/kfed-io/kfed/services"
)

// observation is what one reconcile learned of the world; decide turns it
// into records and conditions.
type observation struct {
	// verdicts say, for each hostname the object serves, whether it holds
	// it (hostnames.Rule, and the DNSEndpoint tenancy rule).
	verdicts []hostnames.Verdict
	// ports are the ports the object listens on.
	ports []int32
	// placed are the joined clusters the object is placed in, with where
	// they are; unknown the names its placement gives that are not joined.
	placed  map[string]place
	unknown []string
	// members holds, for each placed cluster that is Ready, what its copy
	// gave; a placed cluster missing here is not Ready.
	members map[string]memberCopy
	// previous is the cluster table published last.
	previous dnsendpoint.Clusters
	ttl      int64
	// judged is true when health checkers are configured; unhealthy then
	// maps each cluster the quorum finds down to the reason.
	judged    bool
	unhealthy map[string]string
	// freshness is how long a checker's heartbeat counts.
	freshness time.Duration
	// health are the object's kfed.io/health-* annotations, checked.
	health map[string]string
	// weights are each cluster's ready replicas of the federated
	// Deployments behind the object's backends; nil when they select none.
	weights services.Weights
}

// place is where a cluster is.
type place struct {
	region string
	zones  []string
}

// decision is what the object's DNSEndpoint should hold and what its
// status should say.
type decision struct {
	endpoints []extdnsv1alpha1.Endpoint
	clusters  []dnsendpoint.Cluster
	// published are the hostnames published, refused those that are not
	// and why.
	published []string
	refused   []hostnames.Verdict
	// serving are the clusters whose addresses are published; waiting
	// those whose copy has no address yet; offline those not Ready;
	// problems what went wrong with copies.
	serving, waiting, offline []string
	problems                  []string
	// addrs are the serving clusters' addresses, a hostname address's
	// resolved; hostnames those given as names. The object's status shows
	// statusAddrs (the addresses of the clusters without a name) and
	// hostnames, as its members' do.
	addrs, statusAddrs []netip.Addr
	hostnames          []string
	// judged and down: the health verdicts, as "cluster (reason)" for the
	// clusters out of DNS.
	judged bool
	down   []string
	// health are the probe settings for the checkers, kept on the
	// DNSEndpoint as a Service's are.
	health map[string]string
}

// decide computes the records of one federated Gateway or Ingress: each
// hostname it holds, at every placed cluster's addresses (A and AAAA, one
// endpoint per name and type), and the cluster table readers attribute
// the addresses with. It reads nothing and writes nothing:
//   - a placed cluster that is not Ready, or whose copy could not be
//     written, keeps the addresses it had: its API being down says nothing
//     of its Gateway;
//   - a copy's hostname address (an AWS NLB's name) is published as the
//     addresses it resolved to, as a Service's load balancer name is, and
//     kept in the cluster table for providers that alias it; one that did
//     not resolve this time keeps the addresses it had. Never as a CNAME:
//     a hostname may be the zone's apex, where no CNAME can be;
//   - a hostname the rule refuses is not published, and says why;
//   - a cluster the health checkers' quorum finds down leaves the
//     hostnames, unless no cluster is up: then every one stays (fail open,
//     as for a Service's global name);
//   - a cluster's weight is its ready replicas of the federated
//     Deployments behind the object's backends (weights.go; 1 when they
//     select none), 0 keeping its addresses but answered last; its ports
//     are the listeners'.
func decide(o observation) decision {
	var d decision
	for _, v := range o.verdicts {
		switch {
		case v.Reason != "":
			if !slices.ContainsFunc(d.refused, func(r hostnames.Verdict) bool { return r.Hostname == v.Hostname }) {
				d.refused = append(d.refused, v)
			}
		case !slices.Contains(d.published, v.Hostname):
			d.published = append(d.published, v.Hostname)
		}
	}
	slices.Sort(d.published)
	d.problems = append(d.problems, unknownProblem(o.unknown)...)

	var table []dnsendpoint.Cluster
	var healthy []netip.Addr
	d.judged = o.judged
	for _, name := range sortedKeys(o.placed) {
		p := o.placed[name]
		m, ready := o.members[name]
		prev, had := o.previous[name]
		var addrs []netip.Addr
		var hostname string
		switch {
		case !ready:
			d.offline = append(d.offline, name)
			if had {
				addrs, hostname = prev.Addresses, prev.Hostname
			}
		case m.outcome == copyFailed:
			d.problems = append(d.problems, m.problem)
			if had {
				addrs, hostname = prev.Addresses, prev.Hostname
			}
		case m.outcome == copyUnresolved:
			d.problems = append(d.problems, m.problem)
			addrs, hostname = m.addrs, m.hostname
			if had {
				addrs = prev.Addresses
			}
		case m.outcome == copyConflict:
			d.problems = append(d.problems, m.problem)
		case m.outcome == copyWaiting:
			d.waiting = append(d.waiting, name)
		default:
			addrs, hostname = m.addrs, m.hostname
		}
		if len(addrs) == 0 {
			continue
		}
		addrs = sortedAddrs(addrs)
		d.serving = append(d.serving, name)
		d.addrs = append(d.addrs, addrs...)
		if hostname != "" {
			d.hostnames = append(d.hostnames, hostname)
		} else {
			d.statusAddrs = append(d.statusAddrs, addrs...)
		}
		c := dnsendpoint.Cluster{Name: name, Region: p.region, Zones: p.zones, Weight: o.weights.Of(name), Addresses: addrs, Hostname: hostname}
		if reason, down := o.unhealthy[name]; down {
			c.Unhealthy = true
			d.down = append(d.down, fmt.Sprintf("%s (%s)", name, reason))
		} else {
			healthy = append(healthy, addrs...)
		}
		for _, port := range o.ports {
			c.Ports = append(c.Ports, dnsendpoint.Port{Protocol: "TCP", Port: port})
		}
		table = append(table, c)
	}
	d.addrs = sortedAddrs(d.addrs)
	d.statusAddrs = sortedAddrs(d.statusAddrs)
	slices.Sort(d.hostnames)
	d.hostnames = slices.Compact(d.hostnames)
	if len(d.published) == 0 || len(table) == 0 {
		return d
	}
	d.clusters = table
	d.health = probeSettings(o.health, d.published)
	published := d.addrs
	if len(healthy) > 0 {
		published = sortedAddrs(healthy)
	}
	var v4, v6 []string
	for _, a := range published {
		if a.Is4() {
			v4 = append(v4, a.String())
		} else {
			v6 = append(v6, a.String())
		}
	}
	for _, h := range d.published {
		if len(v4) > 0 {
			d.endpoints = append(d.endpoints, extdnsv1alpha1.Endpoint{DNSName: h, RecordType: "A", Targets: v4, RecordTTL: o.ttl})
		}
		if len(v6) > 0 {
			d.endpoints = append(d.endpoints, extdnsv1alpha1.Endpoint{DNSName: h, RecordType: "AAAA", Targets: v6, RecordTTL: o.ttl})
		}
	}
	return d
}

func unknownProblem(unknown []string) []string {
	if len(unknown) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the placement names clusters that are not joined: %s", strings.Join(unknown, ", "))}
}

func sortedAddrs(addrs []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.Unmap())
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// probeSettings are the checkers' settings for the object's clusters: its
// kfed.io/health-* annotations, and, for an http or https check that names
// no host, its first published hostname as the host probes ask for — a
// Gateway answers per host, and its address alone may be answered 404.
// Without a check annotation the probe is a TCP connect to the first
// listener port.
func probeSettings(annotations map[string]string, published []string) map[string]string {
	if len(annotations) == 0 {
		return nil
	}
	out := maps.Clone(annotations)
	check := strings.ToLower(strings.TrimSpace(out[healthcheck.AnnotationCheck]))
	if _, ok := out[healthcheck.AnnotationHost]; !ok && (check == "http" || check == "https") && len(published) > 0 {
		out[healthcheck.AnnotationHost] = published[0]
	}
	return out
}
