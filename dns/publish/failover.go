package publish

import (
	"slices"
	"time"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/policy/failover"
)

// failoverOf chooses the serving place of a name routed by failover
// (Decide): from the policy's order, the rows' verdicts and weights, and
// the state published with the previous records.
// A drained place (drainedOut, Drained) is unavailable. It returns the
// decision and the state it started from.
func failoverOf(policy failover.Policy, rows []dnsendpoint.Cluster, drainedOut []string, published *extdnsv1alpha1.DNSEndpoint, now time.Time) (failover.Decision, failover.State) {
	var prev failover.State
	if published != nil {
		// A state kfed did not write reads as none: the order decides anew.
		prev, _ = failover.ParseState(published.Annotations[dnsendpoint.AnnotationFailover])
	}
	clusters := make([]failover.Cluster, len(rows))
	for i, r := range rows {
		clusters[i] = failover.Cluster{Name: r.Name, Region: r.Region, Zones: r.Zones, Healthy: !r.Unhealthy && !slices.Contains(drainedOut, r.Name), Weight: r.Weight}
	}
	return failover.Decide(policy, clusters, prev, now), prev
}
