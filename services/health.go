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
	// unhealthy maps the endpoints the checker finds down to the reason.
	unhealthy map[string]string
}

// ballots are the checkers' votes on one endpoint, and the reason the first
// checker that finds it down gives.
func (cs checkers) ballots(key string) ([]healthcheck.Ballot, string) {
	out := make([]healthcheck.Ballot, len(cs))
	reason := ""
	for i, c := range cs {
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
	var reports kfedv1alpha1.HealthReportList
	switch err := c.Fed.List(ctx, &reports, client.InNamespace(c.namespace()),
		client.MatchingLabels{kfedv1alpha1.LabelFederation: c.Federation}); {
	case meta.IsNoMatchError(err):
		// A control plane without the HealthReport CRD has no checkers.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading health reports: %w", err)
	}
	var leases coordinationv1.LeaseList
	if err := c.Fed.List(ctx, &leases, client.InNamespace(c.namespace()),
		client.MatchingLabels{kfedv1alpha1.LabelFederation: c.Federation}, client.HasLabels{kfedv1alpha1.LabelChecker}); err != nil {
		return nil, fmt.Errorf("reading checker heartbeats: %w", err)
	}
	renewed := map[string]time.Time{}
	for _, l := range leases.Items {
		if t := renewTime(&l); !t.IsZero() {
			renewed[l.Name] = t
		}
	}
	now := c.now()
	out := make(checkers, 0, len(reports.Items))
	for _, r := range reports.Items {
		v := checkerView{name: r.Name, age: math.MaxInt64, degraded: r.Degraded, unhealthy: map[string]string{}}
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
