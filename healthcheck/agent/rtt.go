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
	changed := false
	for c := range t.buckets {
		if _, ok := measured[c]; !ok {
			delete(t.buckets, c)
			changed = true
		}
	}
	if t.buckets == nil {
		t.buckets = map[string]int{}
	}
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
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kfed", Subsystem: "healthcheck", Name: "rtt_seconds",
		Help: "Round-trip time from this checker to each cluster: the lowest over the cluster's endpoints of the median of their last five passing probes."},
		[]string{"cluster"})
	if reg == nil {
		return g, nil
	}
	return promreg.Register(reg, g)
}

// measure reads engine's RTTs every interval until ctx ends, keeps gauge
// current, and calls changed when a bucket changed.
func (t *rttTable) measure(ctx context.Context, every time.Duration, engine *healthcheck.Engine, gauge *prometheus.GaugeVec, changed func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	shown := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		measured := engine.RTTs()
		for c := range shown {
			if _, ok := measured[c]; !ok {
				gauge.DeleteLabelValues(c)
				delete(shown, c)
			}
		}
		for c, d := range measured {
			gauge.WithLabelValues(c).Set(d.Seconds())
			shown[c] = true
		}
		if t.update(measured) {
			changed()
		}
	}
}
