package services

import (
	"fmt"

	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/failover"
)

// decision is what a Service's DNSEndpoint should hold, and what its
// status should say.
type decision struct {
	status status

	endpoints []extdnsv1alpha1.Endpoint
	clusters  []dnsendpoint.Cluster
	// health are the Service's health-check annotations, for the checkers.
	health map[string]string
	// hostnames is true when an endpoint is a hostname, which is resolved
	// again every resync.
	hostnames bool
	// failover is the state of a failover order to keep with the records,
	// "" without failover routing; due is when a pending failback is to be
	// looked at again (0 for never).
	failover string
	due      time.Duration
	// proximity is true for a Service routed by proximity, whose clusters
	// readers order nearest first for clients outside them.
	proximity bool
}

// decide computes the Service's records from what observe found, what its
// shards gave once written and what was published before, and how the
// Service stands (d.status). It reads nothing and writes nothing, so every
// rule of what is published lives here:
//   - a cluster whose shard write failed, or that is placed but not Ready,
//     keeps the records it had: one failed request, or its API being down,
//     says nothing of its load balancer;
//   - a hostname ingress that did not resolve keeps the addresses it had;
//   - a region or zone once published keeps its name, as a CNAME fallback,
//     after its last cluster leaves, so clients pinned to it keep resolving;
//   - a cluster's weight is its ready replicas of the federated Deployments
//     the Service selects (1 when it selects none);
//   - a drained cluster leaves every name while another cluster can answer
//     (publish.Drained), and failover counts it unavailable.
func decide(o observation) (decision, error) {
	var d decision
	st := &d.status
	if len(o.unknown) > 0 {
		st.placementWarning(fmt.Sprintf("annotation %s names clusters that are not joined: %s", kfedv1alpha1.AnnotationClusters, strings.Join(o.unknown, ", ")))
	}
	previous := publish.Previous(o.published)
	var shards []dnsendpoint.Cluster
	placed := slices.Sorted(func(yield func(string) bool) {
		for name := range o.placed {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range placed {
		m, ready := o.members[name]
		if m.problem != nil {
			st.problems = append(st.problems, *m.problem)
		}
		if !ready {
			// An unreachable member keeps its records (its load balancer
			// may still serve), unless its inventory withdrew it.
			m.outcome = publish.Offline
			if o.joined[name].Withdrawn() {
				m.outcome = publish.Withdrawn
			}
		}
		switch m.outcome {
		case publish.Offline, publish.Withdrawn:
			st.offline(name)
		case publish.Waiting:
			st.waiting(name)
		}
		p, had := previous[name]
		if s, ok := publish.Keep(m.outcome, m.row, p, had); ok {
			s.Drained = o.joined[name].Spec.Drained
			shards = append(shards, s)
		}
	}

	o.weights.Weigh(shards)
	judge(o, previous, shards, st)
	locate(o.joined, shards)
	drain := publish.Drained(shards)
	st.drain = drain

	in := publish.Input{Names: o.names, TTL: o.cfg.TTL, Clusters: shards}
	var fo *failover.Decision
	if o.cfg.Routing == serviceconfig.RoutingFailover {
		d := decideFailover(o, shards, drain.Out, st)
		fo = &d
		if d.State.Active != "" {
			in.Serving = map[string]bool{}
			for _, name := range d.Clusters {
				in.Serving[name] = true
			}
		}
	}
	in.Regions, in.Zones = publish.Places(o.joined, o.published, o.names)
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		st.invalid(reasonNameTooLong, err.Error())
		return decision{status: *st}, err
	}
	st.published(o.names.Global(), drain.Live, len(o.placed))
	d.endpoints, d.clusters, d.health, d.proximity = eps, table, o.cfg.Health, o.cfg.Routing == serviceconfig.RoutingProximity
	if fo != nil {
		d.failover, d.due = fo.State.Encode(), fo.Due
	}
	for _, s := range shards {
		d.hostnames = d.hostnames || s.Hostname != ""
	}
	return d, nil
}

// locate gives each shard its cluster's location, for readers that order
// clusters by distance: the Cluster's own, else its region's place in kfed's
// table of cloud regions. A shard kept from before whose Cluster is gone
// keeps the location it was published with.
func locate(joined map[string]*kfedv1alpha1.Cluster, shards []dnsendpoint.Cluster) {
	for i := range shards {
		s := &shards[i]
		cl := joined[s.Name]
		if cl == nil {
			continue
		}
		s.Location = nil
		if p, ok, _ := cl.Coordinates(); ok {
			s.Location = &p
		}
	}
}

// decideFailover chooses the serving place of a Service routed by failover,
// from the order, the shards' verdicts and weights, and the state published
// with its records, and tells st. A drained cluster out of the names
// (drainedOut) is unavailable, as one found down is.
func decideFailover(o observation, shards []dnsendpoint.Cluster, drainedOut []string, st *status) failover.Decision {
	d, prev := publish.Failover(o.cfg.Failover, shards, drainedOut, o.published, o.now)
	if o.cfg.Within != nil {
		d.Message += "; fails over within " + o.cfg.Within.String()
	}
	st.failover(d, prev)
	return d
}

// judge gives each shard the checkers' verdict (publish.Health.Judge):
// unhealthy only when a strict majority of a quorum of the fresh checkers on
// its panel says so. Without any checker configured, every endpoint is
// healthy.
func judge(o observation, previous map[string]dnsendpoint.Cluster, shards []dnsendpoint.Cluster, st *status) {
	for _, j := range o.health.Judge(o.key.Namespace, o.key.Name, shards, previous) {
		st.verdict(endpointVerdict{cluster: j.Cluster, healthy: j.Healthy, was: j.Was, tally: j.Tally, reason: j.Reason})
	}
}

// copyAction is what decideCopies says to do with one Ready member's
// shard.
type copyAction struct {
	read memberRead
	// placed is false for a member the Service is no longer placed in: the
	// shard kfed made there goes, one it adopted is let go.
	placed bool
	// want is the shard to write; nil to write none.
	want *corev1.Service
	// adopt is true when want takes over a matching Service kfed did not
	// make.
	adopt bool
	// problem says why a shard is left alone.
	problem *problem
}

// decideCopies says, for each Ready member, what its shard should be: the
// member copy of svc (desiredCopy) where it is placed and kfed may write
// it — its own, one it adopted, or a matching Service it adopts now — and
// nothing where another federation's or Service's, or a differing Service
// kfed did not make, holds the name.
func decideCopies(svc *corev1.Service, federation string, o observation) []copyAction {
	origin := o.key.String()
	out := make([]copyAction, 0, len(o.copies))
	for _, r := range o.copies {
		a := copyAction{read: r, placed: o.placed[r.member.Name]}
		name := r.member.Name
		switch {
		case !a.placed, r.err != nil:
		case r.standing == copies.Conflict:
			a.problem = &problem{name, reasonShardConflict, fmt.Sprintf("cluster %s has a Service %s that another federation or Service manages; left alone", name, origin)}
		case r.standing == copies.Foreign && !matches(r.cur, svc):
			a.problem = &problem{name, reasonShardConflict, fmt.Sprintf("cluster %s already has a Service %s that kfed did not create and that differs (type, selector or ports); left alone", name, origin)}
		default:
			a.want = desiredCopy(svc, federation)
			if r.standing == copies.Foreign || r.standing == copies.Adopted {
				a.want.Annotations[kfedv1alpha1.AnnotationAdopted] = "true"
				a.adopt = r.standing == copies.Foreign
			}
		}
		out = append(out, a)
	}
	return out
}

// gave is what a placed member's shard gives the records once written
// without error: a new shard has no ingress yet; an existing one what
// observe read of it.
func gave(a copyAction) memberCopy {
	r := a.read
	switch {
	case a.problem != nil:
		return memberCopy{outcome: publish.LeftAlone, problem: a.problem}
	case r.cur == nil:
		return memberCopy{outcome: publish.Waiting}
	case r.unresolved != nil:
		return memberCopy{outcome: publish.Unresolved, row: r.row, problem: &problem{r.member.Name, reasonIngressUnresolved, r.unresolved.Error()}}
	case len(r.row.Addresses) == 0 && r.row.Hostname == "":
		return memberCopy{outcome: publish.Waiting}
	}
	return memberCopy{outcome: publish.Serving, row: r.row}
}
