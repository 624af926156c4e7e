package publish

import "github.com/kfed-io/kfed/api/externaldns/dnsendpoint"

// Outcome is what a member gave a publisher this reconcile: how its copy
// of the federated object (a Service's shard, a Gateway's or Ingress's
// copy, an exported Service) stands.
type Outcome int

const (
	// Serving: the copy is in place and has addresses.
	Serving Outcome = iota
	// Waiting: the copy is in place, the member has given it no address
	// yet.
	Waiting
	// Unresolved: the copy's address is a hostname that did not resolve
	// this time; the row holds everything else.
	Unresolved
	// WriteFailed: writing the copy failed; it is retried.
	WriteFailed
	// LeftAlone: an object kfed may not take over holds the copy's name.
	LeftAlone
	// Offline: the member is placed but not Ready.
	Offline
	// Withdrawn: the member is placed but its inventory took it out
	// (kfedv1alpha1.Cluster.Withdrawn): unlike Offline, it keeps nothing.
	Withdrawn
)

// keep is the rule of what a placed cluster publishes, given what its
// member gave this reconcile (o and its row now) and what was published
// last (previous, when had):
//   - a cluster whose copy write failed, or that is not Ready, keeps the
//     row it had: one failed request, or its API being down, says nothing
//     of its load balancer;
//   - a hostname that did not resolve keeps the addresses it had;
//   - a copy with no address yet, one kfed left alone, or a member its
//     inventory withdrew, publishes nothing;
//   - a serving copy publishes what it gave.
//
// It reports whether the cluster has a row.
func keep(o Outcome, now, previous dnsendpoint.Cluster, had bool) (dnsendpoint.Cluster, bool) {
	switch o {
	case Serving:
		return now, true
	case Unresolved:
		if had {
			now.Addresses = previous.Addresses
		}
		return now, true
	case Offline, WriteFailed:
		return previous, had
	default:
		return dnsendpoint.Cluster{}, false
	}
}
