package agent

// Round-trip times: what the checker's probes measure of each cluster,
// published on its HealthReport for the CoreDNS plugin of its cluster, which
// orders clusters within a tier by them. Kept cheap and stable: read from
// the engine every RTTInterval (never per probe), published as buckets
// (proximity.Bucket) that move only when the measure leaves its bucket by a
// margin (proximity.Rebucket), and written with the report only when a
// bucket changes.

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/internal/promreg"
	"github.com/kfed-io/kfed/policy/proximity"
)

// DefaultRTTInterval is how often a checker reads its RTTs; with the
// default probe interval of 10 s, each target has three new rounds by then.
const DefaultRTTInterval = 30 * time.Second

// rttTable is the published bucket of each cluster measured.
type rttTable struct {
	mu      sync.Mutex
	buckets map[string]int
}

// update takes the engine's latest measures and reports whether a published
// bucket changed: a cluster measured for the first time or no longer, or
// one whose measure left its bucket by more than the margin.
func (t *rttTable) update(measured map[string]time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := keepMeasured(&t.buckets, measured)
	for c, d := range measured {
		cur, ok := t.buckets[c]
		if !ok {
			cur = -1
		}
		if b := proximity.Rebucket(cur, d); b != cur {
			t.buckets[c] = b
			changed = true
		}
	}
	return changed
}

// keepMeasured drops from *buckets (made when nil) the keys measured does
// not hold, and reports whether any was.
func keepMeasured[B, M any](buckets *map[string]B, measured map[string]M) bool {
	if *buckets == nil {
		*buckets = map[string]B{}
	}
	dropped := false
	for k := range *buckets {
		if _, ok := measured[k]; !ok {
			delete(*buckets, k)
			dropped = true
		}
	}
	return dropped
}

// published is the table as a report carries it, by cluster name.
func (t *rttTable) published() []kfedv1alpha1.ClusterRTT {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []kfedv1alpha1.ClusterRTT
	for _, c := range slices.Sorted(maps.Keys(t.buckets)) {
		out = append(out, kfedv1alpha1.ClusterRTT{Cluster: c, RTT: metav1.Duration{Duration: proximity.BucketRTT(t.buckets[c])}})
	}
	return out
}

// rttGauge is kfed_healthcheck_rtt_seconds: each cluster's measure, before
// it is put in a bucket.
func rttGauge(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	return figureGauge(reg, "rtt_seconds", "cluster",
		"Round-trip time from this checker to each cluster: the lowest over the cluster's endpoints of the median of their last five passing probes.")
}

// figureGauge is the gauge kfed_healthcheck_NAME of a figure per label,
// registered with reg (none when nil).
func figureGauge(reg prometheus.Registerer, name, label, help string) (*prometheus.GaugeVec, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kfed", Subsystem: "healthcheck", Name: name, Help: help}, []string{label})
	if reg == nil {
		return g, nil
	}
	return promreg.Register(reg, g)
}

// measure reads engine's RTTs every interval until ctx ends, keeps gauge
// current, and calls changed when a bucket changed.
func (t *rttTable) measure(ctx context.Context, every time.Duration, engine *healthcheck.Engine, gauge *prometheus.GaugeVec, changed func()) {
	publishEvery(ctx, every, engine.RTTs, time.Duration.Seconds, gauge, t.update, changed)
}

// publishEvery reads figures every interval until ctx ends, shows each in
// gauge (value, labelled by its key; a key read no longer leaves), and
// calls changed when update, given the figures, says a published bucket
// moved. Round-trip times and loads are carried so.
func publishEvery[T any](ctx context.Context, every time.Duration, read func() map[string]T, value func(T) float64,
	gauge *prometheus.GaugeVec, update func(map[string]T) bool, changed func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	shown := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		figures := read()
		for k := range shown {
			if _, ok := figures[k]; !ok {
				gauge.DeleteLabelValues(k)
				delete(shown, k)
			}
		}
		for k, f := range figures {
			gauge.WithLabelValues(k).Set(value(f))
			shown[k] = true
		}
		if update(figures) {
			changed()
		}
	}
}
