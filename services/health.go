package services

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// +kubebuilder:rbac:groups=kfed.io,namespace=kfed-system,resources=healthreports,verbs=get;list;watch

// DefaultFreshness is how long a checker's heartbeat counts: four of the
// agents' default 10 s heartbeats.
const DefaultFreshness = 40 * time.Second

// checkers are the federation's health checkers as one reconcile saw them:
// each one's latest report and the age of its heartbeat.
type checkers []checkerView

type checkerView struct {
	name     string
	age      time.Duration // since the last heartbeat; MaxInt64 without one
	degraded bool
	// domain and perEndpoint are what the assignment of endpoints to
	// checkers reads of it (healthcheck.Fleet, ADR 0012).
	domain      string
	perEndpoint int
	// unhealthy maps the endpoints the checker finds down to the reason.
	unhealthy map[string]string
}

// fleet is the assignment of endpoints to these checkers (ADR 0012),
// built once for the many endpoints a reconcile judges.
func (cs checkers) fleet() *healthcheck.Fleet {
	members := make([]healthcheck.Checker, len(cs))
	for i, c := range cs {
		members[i] = healthcheck.Checker{Name: c.name, Domain: c.domain, PerEndpoint: c.perEndpoint}
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
		r, down := c.unhealthy[key]
		out[i] = healthcheck.Ballot{Checker: c.name, Age: c.age, Degraded: c.degraded, Unhealthy: down}
		if down && reason == "" {
			reason = r
		}
	}
	return out, reason
}

// observeCheckers reads the federation's checkers from the cache: a
// HealthReport each, and the heartbeat Lease of the same name.
func (c *Controller) observeCheckers(ctx context.Context) (checkers, error) {
	return readCheckers(ctx, c.Fed, c.namespace(), c.Federation, c.now())
}

// readCheckers reads federation's checkers from namespace, kfed's: a
// HealthReport each, and the heartbeat Lease of the same name, aged at now.
func readCheckers(ctx context.Context, r client.Reader, namespace, federation string, now time.Time) (checkers, error) {
	var reports kfedv1alpha1.HealthReportList
	switch err := r.List(ctx, &reports, client.InNamespace(namespace),
		client.MatchingLabels{kfedv1alpha1.LabelFederation: federation}); {
	case meta.IsNoMatchError(err):
		// A control plane without the HealthReport CRD has no checkers.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading health reports: %w", err)
	}
	var leases coordinationv1.LeaseList
	if err := r.List(ctx, &leases, client.InNamespace(namespace),
		client.MatchingLabels{kfedv1alpha1.LabelFederation: federation}, client.HasLabels{kfedv1alpha1.LabelChecker}); err != nil {
		return nil, fmt.Errorf("reading checker heartbeats: %w", err)
	}
	renewed := map[string]time.Time{}
	for _, l := range leases.Items {
		if t := renewTime(&l); !t.IsZero() {
			renewed[l.Name] = t
		}
	}
	out := make(checkers, 0, len(reports.Items))
	for _, r := range reports.Items {
		v := checkerView{name: r.Name, age: math.MaxInt64, degraded: r.Degraded, unhealthy: map[string]string{},
			domain: r.FailureDomain(), perEndpoint: int(r.CheckersPerEndpoint)}
		if t, ok := renewed[r.Name]; ok {
			v.age = now.Sub(t)
		}
		for _, u := range r.Unhealthy {
			v.unhealthy[u.Endpoint] = u.Reason
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b checkerView) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// Health is the checkers' view, for another writer of DNSEndpoints in the
// Services' layout (federated Gateways and Ingresses), so that its
// endpoints are judged by the same quorum as a Service's.
type Health struct {
	checkers  checkers
	fleet     *healthcheck.Fleet
	freshness time.Duration
}

// ReadHealth reads federation's checkers from namespace (kfed's), with
// heartbeats aged at now and counting for freshness (DefaultFreshness when
// zero).
func ReadHealth(ctx context.Context, r client.Reader, namespace, federation string, now time.Time, freshness time.Duration) (Health, error) {
	cs, err := readCheckers(ctx, r, namespace, federation, now)
	if freshness <= 0 {
		freshness = DefaultFreshness
	}
	return Health{checkers: cs, fleet: cs.fleet(), freshness: freshness}, err
}

// Judged reports whether any checker is configured: without one, every
// endpoint is healthy and none is judged.
func (h Health) Judged() bool { return len(h.checkers) > 0 }

// Freshness is how long a heartbeat counts: when a verdict may change
// without any report changing.
func (h Health) Freshness() time.Duration { return h.freshness }

// Verdict is the quorum's verdict on the endpoint key
// (kfedv1alpha1.EndpointKey of the DNSEndpoint and cluster), given the one
// published last; reason is the first checker's reason for finding it down.
func (h Health) Verdict(key string, wasHealthy bool) (healthy bool, reason string) {
	if !h.Judged() {
		return true, ""
	}
	ballots, reason := h.checkers.ballots(key, h.fleet)
	healthy, _ = healthcheck.Verdict(len(ballots), h.freshness, ballots, wasHealthy)
	return healthy, reason
}

func renewTime(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	if l.Spec.AcquireTime != nil {
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

func (c *Controller) namespace() string {
	if c.Namespace != "" {
		return c.Namespace
	}
	return kfedv1alpha1.DefaultNamespace
}

func (c *Controller) now() time.Time {
	if c.Clock != nil {
		return c.Clock.Now()
	}
	return time.Now()
}

func (c *Controller) freshness() time.Duration {
	if c.Freshness > 0 {
		return c.Freshness
	}
	return DefaultFreshness
}
