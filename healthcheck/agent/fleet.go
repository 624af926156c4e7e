package agent

// The fleet: which endpoints this checker probes when the federation has
// more checkers than an endpoint needs (ADR 0012). The controller counts,
// for each endpoint, only the ballots of the checkers the same assignment
// seats on its panel, computed from the same HealthReports.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// assignment is the fleet the targets were last assigned by, and what it
// gave each endpoint key seen since: a DNSEndpoint change then costs a
// panel per new key only, a fleet change one per key.
type assignment struct {
	id     string // fleetID of the fleet
	fleet  *healthcheck.Fleet
	probes map[string]bool
}

// checkerOf is r as the assignment sees it.
func checkerOf(r kfedv1alpha1.CountedReport) healthcheck.Checker {
	return healthcheck.Checker{Name: r.Checker, Domain: r.FailureDomain(), PerEndpoint: int(r.CheckersPerEndpoint)}
}

// name is this checker's name in the federation, as the controller reads
// it: its member namespace and its own name.
func (a *agent) name() string { return kfedv1alpha1.CheckerName(a.ns, a.o.Checker) }

// selfChecker is this checker as the assignment will see it once its
// report holds a seat.
func (a *agent) selfChecker() healthcheck.Checker {
	r := a.self()
	domain := r.Region
	if domain == "" {
		domain = "cluster/" + a.o.Cluster
	}
	return healthcheck.Checker{Name: a.name(), Domain: domain, PerEndpoint: int(r.CheckersPerEndpoint)}
}

// seats are the federation's checkers that count, and per cluster those
// beyond its seats, as the controller reads them (kfedv1alpha1.Seats).
func (a *agent) seats(ctx context.Context) ([]kfedv1alpha1.CountedReport, map[string][]*kfedv1alpha1.HealthReport, error) {
	var list kfedv1alpha1.HealthReportList
	if err := a.cache.List(ctx, &list, client.MatchingLabels{kfedv1alpha1.LabelFederation: a.o.Federation}); err != nil {
		return nil, nil, fmt.Errorf("reading the checkers' reports: %w", err)
	}
	var clusters kfedv1alpha1.ClusterList
	if err := a.cache.List(ctx, &clusters); err != nil {
		return nil, nil, fmt.Errorf("reading the clusters: %w", err)
	}
	counted, over := kfedv1alpha1.Seats(list.Items, clusters.Items)
	return counted, over, nil
}

// fleet is the federation's checkers as their stored HealthReports and
// their Clusters say, those holding a seat, sorted by name: this checker
// too, as the controller reads it, so that both assign alike even when
// an API server's older schema drops the fields the assignment reads (the
// report then reads as K 0: every checker probes every endpoint). Until
// its report holds a seat, it counts itself as it will be counted.
func (a *agent) fleet(ctx context.Context) ([]healthcheck.Checker, error) {
	counted, _, err := a.seats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]healthcheck.Checker, 0, len(counted)+1)
	self, seated := a.name(), false
	for _, r := range counted {
		out = append(out, checkerOf(r))
		seated = seated || r.Checker == self
	}
	if !seated {
		out = append(out, a.selfChecker())
	}
	slices.SortFunc(out, func(x, y healthcheck.Checker) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// fleetID says everything the assignment depends on, so that an unchanged
// fleet keeps its panels.
func fleetID(checkers []healthcheck.Checker) string {
	var b strings.Builder
	for _, c := range checkers {
		fmt.Fprintf(&b, "%s\x00%s\x00%d\x01", c.Name, c.Domain, c.PerEndpoint)
	}
	return b.String()
}

// assigned keeps of targets those this checker sits on the panel of, as
// assign, the retarget loop's, gives them or, for a new fleet or key, finds.
func (a *agent) assigned(assign *assignment, checkers []healthcheck.Checker, targets []healthcheck.Target) []healthcheck.Target {
	if id := fleetID(checkers); assign.id != id || assign.fleet == nil {
		f := healthcheck.NewFleet(checkers)
		*assign = assignment{id: id, fleet: f, probes: map[string]bool{}}
		a.o.Logger.Info("checker fleet", "checkers", f.Len(), "checkersPerEndpoint", f.K(), "everyEndpoint", f.All())
	}
	if assign.fleet.All() {
		return targets
	}
	seen := make(map[string]bool, len(targets))
	out := targets[:0]
	for _, t := range targets {
		probes, ok := assign.probes[t.Key]
		if !ok {
			probes = assign.fleet.Probes(a.name(), t.Key)
		}
		seen[t.Key] = probes
		if probes {
			out = append(out, t)
		}
	}
	assign.probes = seen // forget endpoints that went
	return out
}

// keepAssignment is the agent's cache transform of HealthReports: it keeps
// what the assignment reads and drops the verdicts and round-trip times,
// whose size grows with the fleet (a row per cluster), so that N agents do
// not each hold N reports whole.
func keepAssignment(obj any) (any, error) {
	r, ok := obj.(*kfedv1alpha1.HealthReport)
	if !ok {
		return obj, nil // a tombstone
	}
	r.ManagedFields, r.Annotations, r.Unhealthy, r.RTTs = nil, nil, nil, nil
	return r, nil
}

// fleetChanged reports whether a HealthReport update can change the
// assignment: only its K can (a checker's domain is its Cluster's region,
// whose changes the agent follows apart); a verdict or RTT change cannot.
func fleetChanged(old, cur any) bool {
	o, ok1 := old.(*kfedv1alpha1.HealthReport)
	n, ok2 := cur.(*kfedv1alpha1.HealthReport)
	return !ok1 || !ok2 || o.CheckersPerEndpoint != n.CheckersPerEndpoint
}
