package publish

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// Checkers write in their members' namespaces (ADR 0013), so their reports
// and heartbeats are read in every namespace.
//
// +kubebuilder:rbac:groups=kfed.io,resources=healthreports,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch

// DefaultFreshness is how long a checker's heartbeat counts: four of the
// agents' default 10 s heartbeats.
const DefaultFreshness = 40 * time.Second

// checkers are the federation's health checkers as one reconcile saw them:
// each one's latest report and the age of its heartbeat.
type checkers []Checker

// Checker is one health checker as a reconcile saw it.
type Checker struct {
	// Name is "namespace/name" of its report (kfedv1alpha1.CheckerName).
	Name string
	// Cluster is the member it speaks for.
	Cluster  string
	Age      time.Duration // since the last heartbeat; MaxInt64 without one
	Degraded bool
	// Domain and PerEndpoint are what the assignment of endpoints to
	// checkers reads of it (healthcheck.Fleet, ADR 0012).
	Domain      string
	PerEndpoint int
	// Unhealthy maps the endpoints the checker finds down to the reason.
	Unhealthy map[string]string
	// Loads maps the endpoints whose answers carry a load to the figure
	// the checker publishes (1 being the endpoint's target).
	Loads map[string]float64
}

// fleet is the assignment of endpoints to these checkers (ADR 0012),
// built once for the many endpoints a reconcile judges.
func (cs checkers) fleet() *healthcheck.Fleet {
	members := make([]healthcheck.Checker, len(cs))
	for i, c := range cs {
		members[i] = healthcheck.Checker{Name: c.Name, Domain: c.Domain, PerEndpoint: c.PerEndpoint}
	}
	return healthcheck.NewFleet(members)
}

// ballots are the votes on one endpoint of the checkers fleet (cs.fleet();
// built here when nil) seats on its panel — every checker, in a fleet of no
// more checkers than an endpoint needs — and the reason the first of them
// that finds it down gives. Their number is the N of the endpoint's quorum.
func (cs checkers) ballots(key string, fleet *healthcheck.Fleet) ([]healthcheck.Ballot, string) {
	if fleet == nil {
		fleet = cs.fleet()
	}
	panel := slices.Sorted(slices.Values(fleet.Panel(key, nil)))
	out := make([]healthcheck.Ballot, len(panel))
	reason := ""
	for i, j := range panel {
		c := cs[j]
		r, down := c.Unhealthy[key]
		out[i] = healthcheck.Ballot{Checker: c.Name, Age: c.Age, Degraded: c.Degraded, Unhealthy: down}
		if down && reason == "" {
			reason = r
		}
	}
	return out, reason
}

// readCheckers reads federation's checkers: the HealthReports that hold a
// seat of their cluster (kfedv1alpha1.Seats), each with the heartbeat
// Lease of the same namespace and name, aged at now.
func readCheckers(ctx context.Context, r client.Reader, federation string, now time.Time) (checkers, error) {
	var reports kfedv1alpha1.HealthReportList
	switch err := r.List(ctx, &reports, client.MatchingLabels{kfedv1alpha1.LabelFederation: federation}); {
	case meta.IsNoMatchError(err):
		// A control plane without the HealthReport CRD has no checkers.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading health reports: %w", err)
	}
	if len(reports.Items) == 0 {
		return nil, nil
	}
	var clusters kfedv1alpha1.ClusterList
	if err := r.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("reading clusters: %w", err)
	}
	var leases coordinationv1.LeaseList
	if err := r.List(ctx, &leases, client.MatchingLabels{kfedv1alpha1.LabelFederation: federation},
		client.HasLabels{kfedv1alpha1.LabelChecker}); err != nil {
		return nil, fmt.Errorf("reading checker heartbeats: %w", err)
	}
	renewed := map[string]time.Time{}
	for _, l := range leases.Items {
		if t := Heartbeat(&l); !t.IsZero() {
			renewed[kfedv1alpha1.CheckerName(l.Namespace, l.Name)] = t
		}
	}
	counted, _ := kfedv1alpha1.Seats(reports.Items, clusters.Items)
	out := make(checkers, 0, len(counted))
	for _, r := range counted {
		v := Checker{Name: r.Checker, Cluster: r.Cluster.Name, Age: math.MaxInt64, Degraded: r.Degraded, Unhealthy: map[string]string{},
			Domain: r.FailureDomain(), PerEndpoint: int(r.CheckersPerEndpoint)}
		if t, ok := renewed[r.Checker]; ok {
			v.Age = now.Sub(t)
		}
		for _, u := range r.Unhealthy {
			v.Unhealthy[u.Endpoint] = u.Reason
		}
		if len(r.Loads) > 0 {
			v.Loads = make(map[string]float64, len(r.Loads))
			for _, l := range r.Loads {
				v.Loads[l.Endpoint] = l.Utilization.AsApproximateFloat64()
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// Health is the checkers' view as one reconcile read it, so that every
// publisher's endpoints are judged by the same quorum.
type Health struct {
	checkers  checkers
	fleet     *healthcheck.Fleet
	freshness time.Duration
}

// ReadHealth reads federation's checkers, those holding a seat of their
// cluster: a HealthReport each in its member namespace, and the heartbeat
// Lease of the same name, aged at now and counting for freshness
// (DefaultFreshness when zero).
func ReadHealth(ctx context.Context, r client.Reader, federation string, now time.Time, freshness time.Duration) (Health, error) {
	cs, err := readCheckers(ctx, r, federation, now)
	return NewHealth(cs, freshness), err
}

// NewHealth is the view of the checkers cs, whose heartbeats count for
// freshness (DefaultFreshness when zero).
func NewHealth(c []Checker, freshness time.Duration) Health {
	if freshness <= 0 {
		freshness = DefaultFreshness
	}
	cs := checkers(c)
	return Health{checkers: cs, fleet: cs.fleet(), freshness: freshness}
}

// Judged reports whether any checker is configured: without one, every
// endpoint is healthy and none is judged.
func (h Health) Judged() bool { return len(h.checkers) > 0 }

// Freshness is how long a heartbeat counts: when a verdict may change
// without any report changing.
func (h Health) Freshness() time.Duration { return h.freshness }

// Verdict is the quorum's verdict on one endpoint.
type Verdict struct {
	Healthy bool
	// Tally counts the ballots behind it.
	Tally healthcheck.Tally
	// Reason is the first checker's reason for finding it down.
	Reason string
}

// Verdict judges the endpoint key (kfedv1alpha1.EndpointKey of the
// DNSEndpoint and cluster), given whether it was healthy as published last:
// unhealthy only when a strict majority of a quorum of fresh checkers says
// so; with too few fresh checkers the verdict published last stands, so
// neither a partitioned checker nor a controller that restarted without
// fresh reports changes anything. Without any checker, healthy.
func (h Health) Verdict(key string, wasHealthy bool) Verdict {
	if !h.Judged() {
		return Verdict{Healthy: true}
	}
	ballots, reason := h.checkers.ballots(key, h.fleet)
	healthy, tally := healthcheck.Verdict(len(ballots), h.freshness, ballots, wasHealthy)
	return Verdict{Healthy: healthy, Tally: tally, Reason: reason}
}

// Judged is one row's verdict, and whether the row was healthy as
// published last.
type Judged struct {
	Cluster string
	Was     bool
	Verdict
}

// Judge gives each row the checkers' verdict on its endpoint (the
// object's, in the row's cluster), from whether it was healthy as published
// last (previous; a new row was), and returns the verdicts in row order.
// Without any checker configured it judges nothing: the rows are left as
// they are (a row kept from the records published last keeps its verdict,
// as a verdict stands while too few checkers are fresh) and nil is
// returned. Every publisher judges its rows here.
func (h Health) Judge(namespace, name string, rows []dnsendpoint.Cluster, previous map[string]dnsendpoint.Cluster) []Judged {
	if !h.Judged() {
		return nil
	}
	out := make([]Judged, len(rows))
	for i := range rows {
		r := &rows[i]
		was := true
		if p, had := previous[r.Name]; had {
			was = !p.Unhealthy
		}
		v := h.Verdict(kfedv1alpha1.EndpointKey(namespace, name, r.Name), was)
		r.Unhealthy = !v.Healthy
		out[i] = Judged{Cluster: r.Name, Was: was, Verdict: v}
	}
	return out
}

// Ballots are the votes on the endpoint key that Verdict counts, the
// checkers of its panel in name order, and the reason the first that finds
// it down gives: what kfed explain shows of each checker.
func (h Health) Ballots(key string) ([]healthcheck.Ballot, string) {
	if !h.Judged() {
		return nil, ""
	}
	return h.checkers.ballots(key, h.fleet)
}

// Heartbeat is when a checker's Lease was last renewed (or acquired); zero
// when never.
func Heartbeat(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	if l.Spec.AcquireTime != nil {
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}
