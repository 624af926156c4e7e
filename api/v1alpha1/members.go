package v1alpha1

// What a member's agents may speak for in the control plane (ADR 0013): a
// namespace of its own, which only its identities may write in, and a
// bounded number of seats in every quorum.

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// MemberNamespacePrefix begins every member namespace (MemberNamespace).
const MemberNamespacePrefix = "kfed-member-"

// MemberNamespace is the control-plane namespace that holds what the agents
// of member cluster write, their HealthReports and heartbeat Leases, and
// their identities, the ServiceAccounts they authenticate as. Which cluster
// a report speaks for follows from this namespace, where only that
// cluster's identities may write, never from a field the writer fills in.
// A name too long for a namespace with the prefix is cut and ends in a
// hash of the whole, so that two clusters never share one.
func MemberNamespace(cluster string) string {
	ns := MemberNamespacePrefix + cluster
	if len(ns) <= 63 {
		return ns
	}
	sum := sha256.Sum256([]byte(cluster))
	return ns[:63-9] + "-" + hex.EncodeToString(sum[:4])
}

// CountedReport is a HealthReport that counts in quorums: one of the
// oldest MaxCheckers reports in its cluster's member namespace.
type CountedReport struct {
	*HealthReport
	// Checker names the checker in the federation, "namespace/name": every
	// member names its own checkers, so a name alone may repeat.
	Checker string
	// Cluster is the member the report speaks for: the one whose member
	// namespace holds it, whatever its cluster field says.
	Cluster *Cluster
}

// FailureDomain is what the assignment of endpoints to checkers spreads
// an endpoint's checkers across (ADR 0012): the region of the checker's
// Cluster, as the operator or its nodes place it, else the cluster. The
// agents and the controller both read it here, so that they assign alike.
func (r CountedReport) FailureDomain() string {
	if region, _ := r.Cluster.Location(); region != "" {
		return region
	}
	return "cluster/" + r.Cluster.Name
}

// CheckerName is a checker's name in the federation: the namespace and
// name of its HealthReport and heartbeat Lease.
func CheckerName(namespace, name string) string { return namespace + "/" + name }

// Seats sorts a federation's HealthReports into those that count, sorted
// by Checker, and, per cluster name, those its cluster keeps beyond its
// spec.healthCheck.maxCheckers, which do not. Of a cluster's reports the
// oldest count (by creation, then name), so a checker that has reported
// all along keeps its seat when more appear. A report in a namespace that
// is no Cluster's member namespace, or of a cluster with health checking
// off, speaks for nobody and is in neither.
func Seats(reports []HealthReport, clusters []Cluster) (counted []CountedReport, over map[string][]*HealthReport) {
	byNamespace := make(map[string]*Cluster, len(clusters))
	for i := range clusters {
		byNamespace[MemberNamespace(clusters[i].Name)] = &clusters[i]
	}
	mine := map[*Cluster][]*HealthReport{}
	for i := range reports {
		if c := byNamespace[reports[i].Namespace]; c != nil && c.HealthCheckEnabled() {
			mine[c] = append(mine[c], &reports[i])
		}
	}
	for c, rs := range mine {
		slices.SortFunc(rs, func(a, b *HealthReport) int {
			return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
		})
		n := min(len(rs), c.MaxCheckers())
		for _, r := range rs[:n] {
			counted = append(counted, CountedReport{HealthReport: r, Checker: CheckerName(r.Namespace, r.Name), Cluster: c})
		}
		if len(rs) > n {
			if over == nil {
				over = map[string][]*HealthReport{}
			}
			over[c.Name] = rs[n:]
		}
	}
	slices.SortFunc(counted, func(a, b CountedReport) int { return strings.Compare(a.Checker, b.Checker) })
	return counted, over
}
