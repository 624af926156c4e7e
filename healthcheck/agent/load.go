package agent

// Load: the figure each endpoint's answers give the checker's probes,
// published on its HealthReport for the controller, which weighs a name's
// clusters by it (package policy/load). Carried as round-trip times are:
// read from the engine every LoadInterval (never per probe), published as
// buckets that move only when the smoothed figure leaves its bucket by half
// a bucket (load.Rebucket), and written with the report only when a bucket
// changes; so a checker's report changes at most once a LoadInterval for
// an endpoint, and not at all while its load holds.

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/policy/load"
)

// DefaultLoadInterval is how often a checker reads its endpoints' loads:
// the default probe interval, so a bucket moves at most six times a minute.
const DefaultLoadInterval = 10 * time.Second

// loadTable is the published bucket of each endpoint with a figure.
type loadTable struct {
	mu      sync.Mutex
	buckets map[string]loadBucket
}

type loadBucket struct {
	b     int
	since time.Time
}

// update takes the engine's latest figures, at now, and reports whether a
// published bucket changed: an endpoint with a figure for the first time or
// no longer, or one whose figure left its bucket by more than the margin.
func (t *loadTable) update(now time.Time, measured map[string]healthcheck.Load) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := keepMeasured(&t.buckets, measured)
	for k, l := range measured {
		cur, ok := t.buckets[k]
		if !ok {
			cur.b = -1
		}
		if b := load.Rebucket(cur.b, l.Utilization); b != cur.b {
			t.buckets[k] = loadBucket{b: b, since: now.Truncate(time.Second)}
			changed = true
		}
	}
	return changed
}

// published is the table as a report carries it, by endpoint.
func (t *loadTable) published() []kfedv1alpha1.EndpointLoad {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []kfedv1alpha1.EndpointLoad
	for _, k := range slices.Sorted(maps.Keys(t.buckets)) {
		b := t.buckets[k]
		out = append(out, kfedv1alpha1.EndpointLoad{Endpoint: k, Utilization: *resource.NewMilliQuantity(int64(load.Value(b.b)*1000+0.5), resource.DecimalSI),
			Since: metav1.NewTime(b.since)})
	}
	return out
}

// loadGauge is kfed_healthcheck_load: each endpoint's figure, smoothed,
// before it is put in a bucket.
func loadGauge(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	return figureGauge(reg, "load", "endpoint",
		"Load of each endpoint whose answers to this checker's probes carry one (ORCA's endpoint-load-metrics), 1 being its target: the average of its rounds' figures.")
}

// measure reads engine's loads every interval until ctx ends, keeps gauge
// current, and calls changed when a bucket changed.
func (t *loadTable) measure(ctx context.Context, every time.Duration, engine *healthcheck.Engine, gauge *prometheus.GaugeVec, changed func()) {
	publishEvery(ctx, every, engine.Loads, func(l healthcheck.Load) float64 { return l.Utilization }, gauge,
		func(m map[string]healthcheck.Load) bool { return t.update(time.Now(), m) }, changed)
}
