package healthcheck

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kfed-io/kfed/internal/promreg"
)

// metrics are an engine's Prometheus collectors, namespace kfed, subsystem
// healthcheck.
type metrics struct {
	probeOK, probeFail prometheus.Counter
	latency            prometheus.Histogram
	targetsG           prometheus.Gauge
	unhealthyG         prometheus.Gauge
	degradedG          prometheus.Gauge
	skipped            prometheus.Counter
	loadUnreadable     prometheus.Counter
}

// newMetrics makes the collectors and registers them with reg, reusing any
// already registered (a second engine in one process); nil registers none.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "kfed", "healthcheck"
	probes := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "probes_total",
		Help: "Probes of one address, by result (ok, fail)."}, []string{"result"})
	latency := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "probe_duration_seconds",
		Help:    "Time a probe took to connect (tcp) or to receive response headers (http, https), or to fail.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}})
	targets := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "targets",
		Help: "Endpoints this checker probes."})
	unhealthy := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "unhealthy_targets",
		Help: "Endpoints this checker currently sees unhealthy."})
	degraded := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "degraded",
		Help: "1 while this checker sees most endpoints of several clusters fail at once and abstains from quorum votes."})
	skipped := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rounds_skipped_total",
		Help: "Rounds not started because the target's previous round was still running or waiting for a slot: the checker is behind."})
	unreadable := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "load_unreadable_total",
		Help: "Answers to http and https probes whose ORCA load report (endpoint-load-metrics) could not be read; the endpoint's figure is then none."})
	if reg != nil {
		var err error
		if unreadable, err = promreg.Register(reg, unreadable); err != nil {
			return nil, err
		}
		if probes, err = promreg.Register(reg, probes); err != nil {
			return nil, err
		}
		if latency, err = promreg.Register(reg, latency); err != nil {
			return nil, err
		}
		if targets, err = promreg.Register(reg, targets); err != nil {
			return nil, err
		}
		if unhealthy, err = promreg.Register(reg, unhealthy); err != nil {
			return nil, err
		}
		if degraded, err = promreg.Register(reg, degraded); err != nil {
			return nil, err
		}
		if skipped, err = promreg.Register(reg, skipped); err != nil {
			return nil, err
		}
	}
	return &metrics{
		probeOK: probes.WithLabelValues("ok"), probeFail: probes.WithLabelValues("fail"),
		latency: latency, targetsG: targets, unhealthyG: unhealthy, degradedG: degraded, skipped: skipped,
		loadUnreadable: unreadable,
	}, nil
}

func (m *metrics) observe(r Result) {
	if r.OK {
		m.probeOK.Inc()
	} else {
		m.probeFail.Inc()
	}
	m.latency.Observe(r.Latency.Seconds())
}

func (m *metrics) targets(all, unhealthy int) {
	m.targetsG.Set(float64(all))
	m.unhealthyG.Set(float64(unhealthy))
}

func (m *metrics) setDegraded(d bool) {
	if d {
		m.degradedG.Set(1)
	} else {
		m.degradedG.Set(0)
	}
}
