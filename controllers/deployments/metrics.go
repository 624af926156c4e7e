package deployments

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kfed-io/kfed/internal/promreg"
)

// Metrics are the federated Deployment controller's Prometheus collectors.
// A nil *Metrics records nothing.
type Metrics struct {
	reconciles *prometheus.HistogramVec
	writes     *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg. A
// collector already registered (a second manager in one process) is reused.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconciles: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kfed", Subsystem: "deployment", Name: "reconcile_seconds",
			Help: "Time to reconcile one federated Deployment, by result.",
		}, []string{"result"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kfed", Subsystem: "deployment", Name: "copy_operations_total",
			Help: "Member copies of federated Deployments created, updated, adopted, released and deleted.",
		}, []string{"cluster", "operation"}),
	}
	var err error
	if m.reconciles, err = promreg.Register(reg, m.reconciles); err != nil {
		return nil, err
	}
	if m.writes, err = promreg.Register(reg, m.writes); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) reconciled(result string, d time.Duration) {
	if m != nil {
		m.reconciles.WithLabelValues(result).Observe(d.Seconds())
	}
}

func (m *Metrics) write(cluster, op string) {
	if m != nil {
		m.writes.WithLabelValues(cluster, op).Inc()
	}
}
