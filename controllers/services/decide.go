package services

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
)

// decision is what a Service's DNSEndpoint should hold, and what its
// status should say.
type decision struct {
	status status

	endpoints []extdnsv1alpha1.Endpoint
	clusters  []dnsendpoint.Cluster
	// health are the Service's health-check annotations, for the checkers.
	health map[string]string
	// failover is the state of a failover order to keep with the records,
	// "" without failover routing.
	failover string
	// next is when to decide again though nothing changed (0 for never):
	// a failback's hold ends, a hostname is resolved again.
	next time.Duration
	// proximity is true for a Service routed by proximity, whose clusters
	// readers order nearest first for clients outside them.
	proximity bool
}

// decide computes the Service's records from what observe found, what its
// shards gave once written and what was published before, and how the
// Service stands (d.status). It reads nothing and writes nothing: the
// records follow every publisher's rules (publish.Decide); what is the
// Service's own is which member gave what:
//   - a placed cluster that is not Ready is Offline: it keeps its records
//     (its load balancer may still serve), unless its inventory withdrew it;
//   - a cluster's weight is its ready replicas of the federated Deployments
//     the Service selects (1 when it selects none).
func decide(o observation) (decision, error) {
	var d decision
	st := &d.status
	if len(o.unknown) > 0 {
		st.placementWarning(fmt.Sprintf("annotation %s names clusters that are not joined: %s", kfedv1alpha1.AnnotationClusters, strings.Join(o.unknown, ", ")))
	}
	obj := publish.Object{Key: o.key, Names: o.names, TTL: o.cfg.TTL, Joined: o.joined, Published: o.published,
		Weights: o.weights, Health: o.health, Now: o.now, Resync: o.resync}
	if o.cfg.Routing == serviceconfig.RoutingFailover {
		obj.Failover = &o.cfg.Failover
	}
	for _, name := range slices.Sorted(maps.Keys(o.placed)) {
		m, ready := o.members[name]
		if m.problem != nil {
			st.problems = append(st.problems, *m.problem)
		}
		if !ready {
			m.outcome = publish.Offline
		}
		switch m.outcome {
		case publish.Offline:
			st.offline(name)
		case publish.Waiting:
			st.waiting(name)
		}
		m.row.Name = name
		obj.Members = append(obj.Members, publish.Member{Outcome: m.outcome, Row: m.row})
	}

	pd, err := publish.Decide(obj)
	for _, j := range pd.Verdicts {
		st.verdict(endpointVerdict{cluster: j.Cluster, healthy: j.Healthy, was: j.Was, tally: j.Tally, reason: j.Reason})
	}
	st.drain, st.load = pd.Drain, pd.Load
	if pd.Failover != nil {
		fo := *pd.Failover
		if o.cfg.Within != nil {
			fo.Message += "; fails over within " + o.cfg.Within.String()
		}
		st.failover(fo, pd.FailoverWas)
		d.failover = fo.State.Encode()
	}
	if err != nil {
		st.invalid(reasonNameTooLong, err.Error())
		return decision{status: *st}, err
	}
	st.published(o.names.Global(), pd.Drain.Live, len(o.placed))
	d.endpoints, d.clusters, d.health, d.proximity = pd.Endpoints, pd.Clusters, o.cfg.Health, o.cfg.Routing == serviceconfig.RoutingProximity
	d.next = pd.Next
	return d, nil
}

// gave is what each placed member's shard gave the records, once written:
// a write that failed publish.WriteFailed, a new shard no ingress yet, an
// existing one what observe read of it. A member the Service is not placed
// in gave nothing.
func gave(ws []copyWrite) map[string]memberCopy {
	out := map[string]memberCopy{}
	for _, w := range ws {
		a, r := w.action, w.action.read
		var mc memberCopy
		switch {
		case !a.placed:
			continue
		case w.err != nil:
			mc = memberCopy{outcome: publish.WriteFailed, problem: w.problem}
		case a.problem != nil:
			mc = memberCopy{outcome: publish.LeftAlone, problem: a.problem}
		case r.cur == nil:
			mc = memberCopy{outcome: publish.Waiting}
		case r.unresolved != nil:
			mc = memberCopy{outcome: publish.Unresolved, row: r.row, problem: &problem{r.member.Name, reasonIngressUnresolved, r.unresolved.Error()}}
		case len(r.row.Addresses) == 0 && r.row.Hostname == "":
			mc = memberCopy{outcome: publish.Waiting}
		default:
			mc = memberCopy{outcome: publish.Serving, row: r.row}
		}
		out[r.member.Name] = mc
	}
	return out
}
