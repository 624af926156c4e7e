package balancer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kfed-io/kfed/internal/promreg"
)

// Metrics are the Balancer controller's Prometheus collectors. A nil
// *Metrics records nothing.
type Metrics struct {
	reconciles  *prometheus.CounterVec
	scaleWrites *prometheus.CounterVec
	duration    *prometheus.HistogramVec
}

// NewMetrics creates the collectors and registers them with reg. Collectors
// already registered (a second manager in one process) are reused.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kfed", Subsystem: "balancer", Name: "reconciles_total",
			Help: "Balancer reconciles by cluster and result: the Balanced condition's reason.",
		}, []string{"cluster", "result"}),
		scaleWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kfed", Subsystem: "balancer", Name: "scale_writes_total",
			Help: "Targets' /scale written by Balancers, by cluster.",
		}, []string{"cluster"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kfed", Subsystem: "balancer", Name: "reconcile_duration_seconds",
			Help:    "Time to reconcile one Balancer, by cluster.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"cluster"}),
	}
	var err error
	if m.reconciles, err = promreg.Register(reg, m.reconciles); err != nil {
		return nil, err
	}
	if m.scaleWrites, err = promreg.Register(reg, m.scaleWrites); err != nil {
		return nil, err
	}
	if m.duration, err = promreg.Register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) reconciled(cluster, result string, took time.Duration) {
	if m != nil {
		m.reconciles.WithLabelValues(cluster, result).Inc()
		m.duration.WithLabelValues(cluster).Observe(took.Seconds())
	}
}

func (m *Metrics) scaleWrite(cluster string) {
	if m != nil {
		m.scaleWrites.WithLabelValues(cluster).Inc()
	}
}
