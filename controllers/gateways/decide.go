package gateways

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// memberCopy is what one member's copy gave this reconcile.
type memberCopy struct {
	// outcome is how syncing it went: publish.Serving, Waiting (no address
	// yet), WriteFailed, LeftAlone (an object kfed did not make for this
	// origin holds the name), Unresolved (a hostname address that did not
	// resolve this time).
	outcome publish.Outcome
	addrs   []netip.Addr
	// hostname is the copy's address when given as a name (an AWS NLB's),
	// its addresses resolved into addrs every sync.
	hostname string
	// problem says what went wrong, for WriteFailed, LeftAlone and
	// Unresolved.
	problem string
}

// observation is what one reconcile learned of the world; decide turns it
// into records and conditions.
type observation struct {
	// verdicts say, for each hostname the object serves, whether it holds
	// it (tenancy.Hostnames, and the DNSEndpoint tenancy rule).
	verdicts []tenancy.Verdict
	// ports are the ports the object listens on.
	ports []int32
	// placed are the joined Clusters the object is placed in; unknown the
	// names its placement gives that are not joined.
	placed  map[string]*kfedv1alpha1.Cluster
	unknown []string
	// members holds, for each placed cluster that is Ready, what its copy
	// gave; a placed cluster missing here is not Ready.
	members map[string]memberCopy
	// key is the object's DNSEndpoint, endpoint the one published last,
	// nil when none.
	key      types.NamespacedName
	endpoint *extdnsv1alpha1.DNSEndpoint
	ttl      int64
	// health is the federation's health checkers' view.
	health publish.Health
	// health are the object's kfed.io/health-* annotations, checked.
	probes map[string]string
	// weights are each cluster's ready replicas of the federated
	// Deployments behind the object's backends; nil when they select none.
	weights publish.Weights
	// now is when the world was read; resync how often a hostname address
	// is resolved again.
	now    time.Time
	resync time.Duration
}

// decision is what the object's DNSEndpoint should hold and what its
// status should say.
type decision struct {
	endpoints []extdnsv1alpha1.Endpoint
	clusters  []dnsendpoint.Cluster
	// published are the hostnames published, refused those that are not
	// and why.
	published []string
	refused   []tenancy.Verdict
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
	// drain is how the object's drained clusters stand.
	drain publish.Drain
	// publishers are what the DNS providers reported on the DNSEndpoint
	// published last, of generation epGen.
	publishers []extdnsv1alpha1.PublisherStatus
	epGen      int64
	// next is when to decide again though nothing changed (0 for never).
	next time.Duration
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
//   - a drained cluster leaves the hostnames while another cluster can
//     answer (publish.Drained);
//   - a cluster's weight is its ready replicas of the federated
//     Deployments behind the object's backends (weights.go; 1 when they
//     select none), 0 keeping its addresses but answered last; its ports
//     are the listeners'.
//
// It is one function of about 90 lines because the rules above apply in
// that order to the same maps; split, each part would take them all.
func decide(o observation) decision {
	var d decision
	for _, v := range o.verdicts {
		switch {
		case v.Reason != "":
			if !slices.ContainsFunc(d.refused, func(r tenancy.Verdict) bool { return r.Hostname == v.Hostname }) {
				d.refused = append(d.refused, v)
			}
		case !slices.Contains(d.published, v.Hostname):
			d.published = append(d.published, v.Hostname)
		}
	}
	slices.Sort(d.published)
	d.problems = append(d.problems, unknownProblem(o.unknown)...)
	if o.endpoint != nil {
		d.publishers, d.epGen = o.endpoint.Status.Publishers, o.endpoint.Generation
	}

	d.judged = o.health.Judged()
	obj := publish.Object{Key: o.key, OwnNames: true, Hostnames: d.published, TTL: o.ttl, Joined: o.placed, Published: o.endpoint,
		Weights: o.weights, Health: o.health, Now: o.now, Resync: o.resync}
	for _, name := range slices.Sorted(maps.Keys(o.placed)) {
		m, ready := o.members[name]
		if !ready {
			m.outcome = publish.Offline
		}
		switch m.outcome {
		case publish.Offline:
			d.offline = append(d.offline, name)
		case publish.WriteFailed, publish.Unresolved, publish.LeftAlone:
			d.problems = append(d.problems, m.problem)
		case publish.Waiting:
			d.waiting = append(d.waiting, name)
		}
		row := dnsendpoint.Cluster{Name: name, Addresses: m.addrs, Hostname: m.hostname}
		for _, port := range o.ports {
			row.Ports = append(row.Ports, dnsendpoint.Port{Protocol: "TCP", Port: port})
		}
		obj.Members = append(obj.Members, publish.Member{Outcome: m.outcome, Row: row})
	}
	pd, _ := publish.Decide(obj) // a hostname's length was checked as it was claimed
	for _, c := range pd.Rows {
		addrs := publish.SortedAddrs(c.Addresses)
		d.serving = append(d.serving, c.Name)
		d.addrs = append(d.addrs, addrs...)
		if c.Hostname != "" {
			d.hostnames = append(d.hostnames, c.Hostname)
		} else {
			d.statusAddrs = append(d.statusAddrs, addrs...)
		}
	}
	for _, v := range pd.Verdicts {
		if !v.Healthy {
			d.down = append(d.down, fmt.Sprintf("%s (%s)", v.Cluster, cmp.Or(v.Reason, "out until a quorum of fresh checkers finds it up")))
		}
	}
	d.addrs = publish.SortedAddrs(d.addrs)
	d.statusAddrs = publish.SortedAddrs(d.statusAddrs)
	slices.Sort(d.hostnames)
	d.hostnames = slices.Compact(d.hostnames)
	d.next = pd.Next
	if len(pd.Clusters) == 0 {
		return d
	}
	d.endpoints, d.clusters, d.drain = pd.Endpoints, pd.Clusters, pd.Drain
	d.health = probeSettings(o.probes, d.published)
	return d
}

func unknownProblem(unknown []string) []string {
	if len(unknown) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the placement names clusters that are not joined: %s", strings.Join(unknown, ", "))}
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
	check := strings.ToLower(strings.TrimSpace(out[kfedv1alpha1.AnnotationHealthCheck]))
	if _, ok := out[kfedv1alpha1.AnnotationHealthHost]; !ok && (check == "http" || check == "https") && len(published) > 0 {
		out[kfedv1alpha1.AnnotationHealthHost] = published[0]
	}
	return out
}
