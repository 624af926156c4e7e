package publish

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/failover"
)

// Object is everything the records of one federated object (a Service, an
// export's name, a Gateway or an Ingress) depend on, as one reconcile
// observed it. Decide turns it into records; publishers only fill it in.
type Object struct {
	// Key is the object's DNSEndpoint: the checkers key the endpoints they
	// probe by it (kfedv1alpha1.EndpointKey).
	Key types.NamespacedName
	// Names are the federation's names of a Service or an export (global,
	// region, zone, cluster, SRV). With OwnNames the records are instead
	// Hostnames, a Gateway's or Ingress's own, each answering the live
	// clusters' addresses and nothing else: a hostname may be a zone's
	// apex, where no CNAME can be; a row without an address has no place
	// there.
	Names     Names
	OwnNames  bool
	Hostnames []string
	TTL       int64
	// Members are the clusters that may have a row, in order: each placed
	// cluster, and any other that held a row and whose member could not
	// say (Offline).
	Members []Member
	// Joined are the federation's Clusters: where each is, whether it is
	// drained, whether its inventory withdrew it.
	Joined map[string]*kfedv1alpha1.Cluster
	// Published is the object's DNSEndpoint, nil when it has none yet.
	Published *extdnsv1alpha1.DNSEndpoint
	Weights   Weights
	Health    Health
	// Failover is the object's failover order, nil when it is not routed
	// by failover.
	Failover *failover.Policy
	// Now is when the world was read; Resync how often a load balancer's
	// hostname is resolved again (a minute when zero).
	Now    time.Time
	Resync time.Duration
}

// Member is what one cluster's member gave this reconcile: how its copy
// stands and, Serving or Unresolved, the row it gives (dnsendpoint.Cluster:
// the ports and addresses are the member's; the place, weight, drain and
// verdict Decide's). Row.Name names the cluster whatever the outcome.
type Member struct {
	Outcome Outcome
	Row     dnsendpoint.Cluster
}

// Decision is what an Object publishes, and what its status tells.
type Decision struct {
	// Endpoints are the records, Clusters the cluster table beside them;
	// none when the object has nothing to publish.
	Endpoints []extdnsv1alpha1.Endpoint
	Clusters  []dnsendpoint.Cluster
	// Rows are the clusters with a row, in the members' order, weighed,
	// located and judged; Verdicts the checkers' verdicts on them (none
	// without checkers).
	Rows     []dnsendpoint.Cluster
	Verdicts []Judged
	Drain    Drain
	// Load is what the endpoints' loads made of the rows' weights.
	Load Loads
	// Failover is the decision of a failover order and FailoverWas the
	// state it started from; nil without one.
	Failover    *failover.Decision
	FailoverWas failover.State
	// Next is when the object is to be decided again though nothing it
	// watches changed; 0 for never.
	Next time.Duration
}

// Decide is the one recipe of every publisher, and reads nothing: given an
// Object it returns the records, the cluster table, and when to look again.
// In this order:
//   - each member's row is what it gave, or what it had (keep): a member not
//     Ready keeps its row, one its inventory withdrew keeps none;
//   - the rows are weighed (Weights), located (the Cluster's region, zones
//     and coordinates, for readers that order clusters by distance; a row
//     kept from before whose Cluster is gone keeps the place it was
//     published with), marked drained (the Cluster's spec.drained), and
//     judged by the checkers' quorum (Health.Judge);
//   - a failover order chooses the serving place (failoverOf);
//   - the rows that may answer the shared names are weighed by their
//     endpoints' loads, and those at or over their target shed while
//     others have headroom (weighLoad);
//   - the records follow (Endpoints, or each hostname at the live clusters'
//     addresses, the healthy ones while any is), drained clusters out
//     while another can answer (Drained).
//
// It is looked at again when a failback's hold ends, when a load balancer
// hostname is due to be resolved again, and, while a cluster is found
// down, when a heartbeat may go stale (a verdict that stands for want of
// fresh checkers changes then, and no report tells).
func Decide(o Object) (Decision, error) {
	previous := Previous(o.Published)
	var d Decision
	for _, m := range o.Members {
		name := m.Row.Name
		cl := o.Joined[name]
		if m.Outcome == Offline && cl != nil && cl.Withdrawn() {
			m.Outcome = Withdrawn
		}
		p, had := previous[name]
		r, ok := keep(m.Outcome, m.Row, p, had)
		if !ok || (o.OwnNames && len(r.Addresses) == 0) {
			continue
		}
		r.Name = name
		if cl != nil {
			r.Drained = cl.Spec.Drained
			r.Region, r.Zones = cl.Location()
			r.Location = nil
			if loc, ok, _ := cl.Coordinates(); ok {
				r.Location = &loc
			}
		}
		d.Rows = append(d.Rows, r)
	}
	o.Weights.Weigh(d.Rows)
	d.Verdicts = o.Health.Judge(o.Key.Namespace, o.Key.Name, d.Rows, previous)
	d.Drain = Drained(d.Rows)
	d.Next = next(o, d.Rows)

	if o.OwnNames {
		d.weighLoad(o, previous, nil)
		d.Endpoints, d.Clusters = hostnameEndpoints(o, d.Rows, d.Drain.Live)
		return d, nil
	}
	in := Input{Names: o.Names, TTL: o.TTL, Clusters: d.Rows}
	if o.Failover != nil {
		fo, was := failoverOf(*o.Failover, d.Rows, d.Drain.Out, o.Published, o.Now)
		d.Failover, d.FailoverWas = &fo, was
		if fo.State.Active != "" {
			in.Serving = map[string]bool{}
			for _, name := range fo.Clusters {
				in.Serving[name] = true
			}
		}
		if fo.Due > 0 {
			// Just after the hold ends, not just before.
			d.Next = minDue(d.Next, fo.Due+100*time.Millisecond)
		}
	}
	d.weighLoad(o, previous, in.Serving)
	in.Clusters = d.Rows
	in.Regions, in.Zones = places(o.Joined, o.Published, o.Names)
	var err error
	if d.Endpoints, d.Clusters, err = Endpoints(in); err != nil {
		// Nothing to publish; the rows, verdicts and failover still tell
		// the status.
		d.Endpoints, d.Clusters, d.Next = nil, nil, 0
		return d, err
	}
	return d, nil
}

// weighLoad weighs d's rows by their endpoints' loads (Health.Load,
// policy/load) among those that may answer the shared names: not found
// down, not drained out, and in serving when a failover order chose a
// place. Failover has chosen by then, by capacity: load reorders within
// the place it serves from, and never makes a place unavailable.
func (d *Decision) weighLoad(o Object, previous map[string]dnsendpoint.Cluster, serving map[string]bool) {
	out := func(r dnsendpoint.Cluster) bool {
		return r.Unhealthy || slices.Contains(d.Drain.Out, r.Name) || (serving != nil && !serving[r.Name])
	}
	d.Load = weighLoad(o.Health, o.Key.Namespace, o.Key.Name, d.Rows, out, previous)
	d.Drain = Drained(d.Rows) // its rows are copies: again, with the weights
}

// hostnameEndpoints are a Gateway's or Ingress's records: each hostname at
// the addresses of the live rows (Drained), only the healthy ones while
// any is (fail open, as a Service's global name), and the table of every
// row. Nothing when there is no hostname or no row.
func hostnameEndpoints(o Object, rows, live []dnsendpoint.Cluster) ([]extdnsv1alpha1.Endpoint, []dnsendpoint.Cluster) {
	if len(o.Hostnames) == 0 || len(rows) == 0 {
		return nil, nil
	}
	var all, healthy []netip.Addr
	for _, c := range live {
		all = append(all, c.Addresses...)
		if !c.Unhealthy && !c.Shed {
			healthy = append(healthy, c.Addresses...)
		}
	}
	if len(healthy) > 0 {
		all = healthy
	}
	var eps []extdnsv1alpha1.Endpoint
	for _, h := range o.Hostnames {
		eps = append(eps, AddressEndpoints(h, all, cmp.Or(o.TTL, DefaultTTL))...)
	}
	return eps, table(rows)
}

// next is when rows are due to be looked at again, failover aside.
func next(o Object, rows []dnsendpoint.Cluster) time.Duration {
	var due time.Duration
	for _, r := range rows {
		if r.Hostname != "" {
			// A load balancer's name may point elsewhere at any time.
			due = minDue(due, cmp.Or(o.Resync, time.Minute))
		}
		if r.Unhealthy && o.Health.Judged() {
			due = minDue(due, o.Health.Freshness())
		}
	}
	return due
}

// minDue is the sooner of two due times, 0 meaning never.
func minDue(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
