package agent

// The report: the checker's verdicts, written to its HealthReport only when
// they differ from the stored ones.

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func (a *agent) verdictChanged(key string, healthy bool) {
	a.mu.Lock()
	if healthy {
		delete(a.since, key)
	} else if _, ok := a.since[key]; !ok {
		a.since[key] = time.Now()
	}
	a.mu.Unlock()
	a.markDirty()
}

// reports writes the HealthReport when it may have changed (debounced) and
// on every resync, each time only if it differs from the stored one.
func (a *agent) reports(ctx context.Context) {
	debounce := cmpDuration(a.o.Debounce, 200*time.Millisecond)
	resync := time.NewTicker(cmpDuration(a.o.Resync, 10*time.Minute))
	defer resync.Stop()
	// A failed write is tried again after a second, then after twice as
	// long each time, up to a minute, until one succeeds.
	retry := wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: math.MaxInt32}
	backoff := retry
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.dirty:
			select {
			case <-ctx.Done():
				return
			case <-time.After(debounce):
			}
		case <-resync.C:
		}
		if a.off.Load() {
			continue
		}
		if err := a.writeReport(ctx); err != nil {
			a.o.Logger.Error(err, "writing the health report")
			a.markDirty()
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff.Step()):
			}
			continue
		}
		backoff = retry
	}
}

// report is the HealthReport the agent's view calls for.
func (a *agent) report() *kfedv1alpha1.HealthReport {
	state := a.engine.State()
	r := &kfedv1alpha1.HealthReport{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.o.Checker, Namespace: a.ns,
			Labels: map[string]string{
				kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: a.o.Federation,
				kfedv1alpha1.LabelChecker: a.o.Checker, kfedv1alpha1.LabelCluster: a.o.Cluster,
			},
		},
		Federation: a.o.Federation, Cluster: a.o.Cluster, Endpoints: int32(len(state)),
		RTTs: a.rtts.published(), Loads: a.loads.published(),
	}
	self := a.self()
	r.Region, r.CheckersPerEndpoint = self.Region, self.CheckersPerEndpoint
	// A degraded checker abstains; listing what it finds down would only
	// make its report large exactly when it is not believed.
	if r.Degraded = a.engine.Degraded(); r.Degraded {
		return r
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(state)) {
		if state[key] {
			continue
		}
		since, ok := a.since[key]
		if !ok {
			since = time.Now()
			a.since[key] = since
		}
		r.Unhealthy = append(r.Unhealthy, kfedv1alpha1.UnhealthyEndpoint{
			Endpoint: key, Since: metav1.NewTime(since.Truncate(time.Second)), Reason: a.reason(key),
		})
	}
	r.UnhealthyCount = int32(len(r.Unhealthy))
	return r
}

// reason is the latest failed probe's reason for key, as a report shows it.
func (a *agent) reason(key string) string {
	if r, ok := a.engine.Last(key); ok && !r.OK {
		return r.Reason
	}
	return ""
}

func (a *agent) writeReport(ctx context.Context) error {
	want := a.report()
	var cur kfedv1alpha1.HealthReport
	err := a.c.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	if apierrors.IsNotFound(err) {
		if err := a.c.Create(ctx, want); err != nil {
			return fmt.Errorf("creating HealthReport %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading HealthReport %s: %w", want.Name, err)
	}
	if sameReport(&cur, want) {
		return nil
	}
	cur.Labels, cur.Federation, cur.Cluster = want.Labels, want.Federation, want.Cluster
	cur.Degraded, cur.Endpoints, cur.Unhealthy, cur.UnhealthyCount = want.Degraded, want.Endpoints, want.Unhealthy, want.UnhealthyCount
	cur.RTTs, cur.Loads, cur.Region, cur.CheckersPerEndpoint = want.RTTs, want.Loads, want.Region, want.CheckersPerEndpoint
	if err := a.c.Update(ctx, &cur); err != nil {
		return fmt.Errorf("updating HealthReport %s: %w", want.Name, err)
	}
	return nil
}

func sameLoad(x, y kfedv1alpha1.EndpointLoad) bool {
	return x.Endpoint == y.Endpoint && x.Utilization.Cmp(y.Utilization) == 0 && x.Since.Equal(&y.Since)
}

// sameReport compares what a report says, not when its entries were read.
func sameReport(a, b *kfedv1alpha1.HealthReport) bool {
	if a.Federation != b.Federation || a.Cluster != b.Cluster || a.Region != b.Region || a.CheckersPerEndpoint != b.CheckersPerEndpoint ||
		a.Degraded != b.Degraded || a.Endpoints != b.Endpoints ||
		len(a.Unhealthy) != len(b.Unhealthy) || !maps.Equal(a.Labels, b.Labels) || !slices.Equal(a.RTTs, b.RTTs) ||
		!slices.EqualFunc(a.Loads, b.Loads, sameLoad) {
		return false
	}
	for i := range a.Unhealthy {
		x, y := a.Unhealthy[i], b.Unhealthy[i]
		if x.Endpoint != y.Endpoint || x.Reason != y.Reason || !x.Since.Equal(&y.Since) {
			return false
		}
	}
	return true
}
