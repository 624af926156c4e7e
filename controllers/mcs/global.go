package mcs

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
)

// Reasons of kfedv1alpha1.ConditionGlobalName.
const (
	ReasonPublished          = "Published"
	ReasonInvalidAnnotations = "InvalidAnnotations"
	ReasonNoNamespace        = "NoNamespace"
	ReasonNameTaken          = "NameTaken"
	ReasonNotPublished       = "NotPublished"
)

// Origin is the kfed.io/hostnames-of (kfedv1alpha1.AnnotationHostnamesOf) of the
// DNSEndpoint N/S that publishes the exports of N/S: the export has no
// object in the control plane to own it.
func Origin(key types.NamespacedName) string { return "ServiceExport " + key.String() }

// lbExport is one Ready member's valid export of a Service of type
// LoadBalancer, as the global name reads it.
type lbExport struct {
	// export is the member's export; its Cluster is the cluster ID.
	export Export
	// row is the cluster as the DNSEndpoint's table holds it, named by
	// the member's name (as a federated Service's shards are), weight
	// and verdict still to decide; outcome says how it stands.
	row     dnsendpoint.Cluster
	outcome publish.Outcome
}

// globalInput is what a name's global records depend on.
type globalInput struct {
	names publish.Names
	key   types.NamespacedName
	// exports are the Ready members' valid exports of LoadBalancer
	// Services; none means the name is not published.
	exports []lbExport
	// joined are the federation's Clusters; a joined one that is not Ready
	// keeps the row it had (publish.Decide), unless withdrawn.
	joined map[string]*kfedv1alpha1.Cluster
	ready  map[string]bool
	// published is the name's DNSEndpoint when it is this export's, nil
	// otherwise.
	published *extdnsv1alpha1.DNSEndpoint
	health    publish.Health
	now       time.Time
}

// globalDecision is what the exports of a name publish.
type globalDecision struct {
	// publish is false when no export publishes the name: kfed's
	// DNSEndpoint for it goes, unless keep says to leave it as it is.
	publish, keep bool
	endpoints     []extdnsv1alpha1.Endpoint
	clusters      []dnsendpoint.Cluster
	annotations   map[string]string
	// healthy are the clusters (member names) the name answers, after
	// failing open: the import's EndpointSlices keep only these clusters'
	// load balancers ready.
	healthy map[string]bool
	// due is when to decide again though nothing changed (publish.Decide's
	// Next: a failback's hold ends, a hostname is resolved again); 0 for
	// never.
	due time.Duration
	// condition is kfedv1alpha1.ConditionGlobalName for every export in exports.
	condition metav1.Condition
}

// globalState is what one reconcile learned and decided of a name's
// federation names.
type globalState struct {
	decision globalDecision
	// exporters are the cluster IDs of the exports the condition is for:
	// the valid exports of LoadBalancer Services.
	exporters map[string]bool
	// published is kfed's DNSEndpoint for the exports, nil when none;
	// taken is true when a DNSEndpoint of the name is not the exports'
	// (a federated Service's of the same name, or a user's).
	published *extdnsv1alpha1.DNSEndpoint
	taken     bool
}

// decideGlobal decides the federation's names of the exports of a name, by
// every publisher's rules (publish.Decide), and reads nothing:
//   - the routing annotations (kfed.io/routing, kfed.io/failover-order,
//     kfed.io/ttl, kfed.io/health-*) are the oldest export's, as KEP-1645
//     resolves every conflict; an export that says otherwise is named in
//     the condition;
//   - a cluster's weight is its exported Service's ready endpoints (the
//     default weight for a Service without EndpointSlices, such as one
//     without a selector);
//   - a joined cluster that is not Ready keeps the row it had.
func decideGlobal(in globalInput) globalDecision {
	if len(in.exports) == 0 {
		return globalDecision{}
	}
	exports := slices.Clone(in.exports)
	slices.SortFunc(exports, func(a, b lbExport) int {
		return cmp.Or(a.export.Export.CreationTimestamp.Compare(b.export.Export.CreationTimestamp.Time),
			cmp.Compare(a.export.Cluster, b.export.Cluster))
	})
	winner := exports[0]
	cfg, cfgErr := serviceconfig.Parse(winner.export.Export.Annotations)
	var differ []string
	for _, e := range exports[1:] {
		if !maps.Equal(kfedAnnotations(e.export.Export.Annotations), kfedAnnotations(winner.export.Export.Annotations)) {
			differ = append(differ, e.export.Cluster)
		}
	}

	obj := globalObject(in, exports, cfg)
	pd, err := publish.Decide(obj)
	if err != nil {
		// A name DNS cannot hold publishes nothing new; what was published
		// stays (never a deleted record for bad input).
		return globalDecision{keep: true, condition: globalCondition(metav1.ConditionFalse, ReasonNotPublished, err.Error())}
	}
	rows := pd.Rows
	var unhealthy []string
	for _, j := range pd.Verdicts {
		if !j.Healthy {
			unhealthy = append(unhealthy, j.Cluster)
		}
	}
	d := globalDecision{publish: true, annotations: maps.Clone(cfg.Health), endpoints: pd.Endpoints, clusters: pd.Clusters, due: pd.Next}
	if d.annotations == nil {
		d.annotations = map[string]string{}
	}
	var routing string
	switch {
	case cfg.Routing == serviceconfig.RoutingProximity:
		d.annotations[dnsendpoint.AnnotationRouting] = dnsendpoint.RoutingProximity
	case pd.Failover != nil:
		d.annotations[dnsendpoint.AnnotationFailover] = pd.Failover.State.Encode()
		routing = "; failover: " + pd.Failover.Message
	}
	// The import's slices take the load balancers of clusters the names
	// leave out, found down or drained, as not ready (markHealth).
	d.healthy = map[string]bool{}
	for _, r := range rows {
		d.healthy[r.Name] = !r.Unhealthy && !slices.Contains(pd.Drain.Out, r.Name)
	}
	if len(unhealthy) == len(rows) {
		for name := range d.healthy {
			d.healthy[name] = true // fail open, as the global name does
		}
	}

	msg := globalMessage(in.names, rows, unhealthy, routing, differ, winner.export.Cluster)
	d.condition = globalCondition(metav1.ConditionTrue, ReasonPublished, msg)
	if cfgErr != nil {
		d.condition = globalCondition(metav1.ConditionFalse, ReasonInvalidAnnotations,
			fmt.Sprintf("the oldest export's (cluster %s's) annotations: %v; published with defaults in their place: %s",
				winner.export.Cluster, cfgErr, msg))
	}
	return d
}

func globalCondition(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: kfedv1alpha1.ConditionGlobalName, Status: status, Reason: reason, Message: msg}
}

// kfedAnnotations are an export's kfed.io/ annotations: those the global
// name is published by.
func kfedAnnotations(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if strings.HasPrefix(k, "kfed.io/") {
			out[k] = v
		}
	}
	return out
}

// readyEndpoints is the weight of a cluster's export: its Service's ready
// endpoints, or the default weight when it has no EndpointSlice.
func readyEndpoints(slices []discoveryv1.EndpointSlice) int {
	if len(slices) == 0 {
		return dnsendpoint.DefaultWeight
	}
	n := 0
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				n++
			}
		}
	}
	return min(n, dnsendpoint.MaxWeight)
}

// globalObject is what the name's records depend on (publish.Decide): the
// rows of the exports, and of the joined clusters that are not Ready and
// had one (Offline: kept unless withdrawn), each weighed by its exported
// Service's ready endpoints, a kept row by the weight it had.
func globalObject(in globalInput, exports []lbExport, cfg serviceconfig.Config) publish.Object {
	obj := publish.Object{Key: in.key, Names: in.names, TTL: cfg.TTL, Joined: in.joined, Published: in.published,
		Weights: publish.Weights{}, Health: in.health, Now: in.now}
	if cfg.Routing == serviceconfig.RoutingFailover {
		obj.Failover = &cfg.Failover
	}
	exporting := map[string]bool{}
	for _, e := range exports {
		exporting[e.row.Name] = true
		obj.Members = append(obj.Members, publish.Member{Outcome: e.outcome, Row: e.row})
		obj.Weights[e.row.Name] = e.row.Weight
	}
	previous := publish.Previous(in.published)
	for _, name := range slices.Sorted(maps.Keys(previous)) {
		if exporting[name] || in.ready[name] || in.joined[name] == nil {
			continue // gone from a Ready member, or no longer joined
		}
		obj.Members = append(obj.Members, publish.Member{Outcome: publish.Offline, Row: dnsendpoint.Cluster{Name: name}})
		obj.Weights[name] = previous[name].Weight
	}
	return obj
}

// globalMessage is kfedv1alpha1.ConditionGlobalName's message of a published name.
func globalMessage(n publish.Names, rows []dnsendpoint.Cluster, unhealthy []string, routing string, differ []string, winner string) string {
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	msg := fmt.Sprintf("%s answers clusters %s", n.Global(), strings.Join(names, ", "))
	if len(names) == 0 {
		msg = n.Global() + " has no cluster with a load balancer address yet"
	}
	if len(unhealthy) > 0 {
		msg += "; unhealthy: " + strings.Join(unhealthy, ", ")
		if len(unhealthy) == len(rows) {
			msg += " (every cluster: all are kept, failing open)"
		}
	}
	msg += routing
	if len(differ) > 0 {
		msg += fmt.Sprintf("; the kfed.io annotations of the exports in clusters %s differ from the oldest export's, cluster %s's, which win",
			strings.Join(differ, ", "), winner)
	}
	return msg
}

// markHealth takes the clusters the global name leaves out, found down or
// drained, out of the import's EndpointSlices: their load balancers'
// endpoints are written not ready (EndpointsIn).
func markHealth(imp *Import, members []*member, st *globalState) {
	if imp == nil || st == nil || st.decision.healthy == nil {
		return
	}
	name := map[string]string{}
	for _, m := range members {
		name[m.id] = m.Name
	}
	for i := range imp.Sources {
		healthy, judged := st.decision.healthy[name[imp.Sources[i].Cluster]]
		imp.Sources[i].Unhealthy = judged && !healthy
	}
}
