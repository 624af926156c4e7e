package healthcheck

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestEngineMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := newHarness(t, Options{Registerer: reg})
	addr := addrOf(t, listen(t).Addr())
	spec := Defaults()
	spec.Fall = 1
	if err := h.e.Set([]Target{
		{Key: "up", Cluster: "a", Addrs: []netip.AddrPort{addr}, Spec: spec},
		{Key: "down", Cluster: "b", Addrs: []netip.AddrPort{refusedAddr(t)}, Spec: spec},
	}); err != nil {
		t.Fatal(err)
	}
	h.advance(11 * time.Second)
	want := map[string]float64{
		"kfed_healthcheck_degraded":                     0,
		`kfed_healthcheck_probes_total{result="fail"}`:  1,
		`kfed_healthcheck_probes_total{result="ok"}`:    1,
		"kfed_healthcheck_targets":                      2,
		"kfed_healthcheck_unhealthy_targets":            1,
		"kfed_healthcheck_probe_duration_seconds_count": 2,
		"kfed_healthcheck_rounds_skipped_total":         0,
	}
	got := gather(t, reg)
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	// A second engine in the same process shares the collectors.
	if _, err := NewEngine(Options{Registerer: reg}); err != nil {
		t.Errorf("second engine: %v", err)
	}
}

// gather reads reg's metrics as "name{label="value"}" → value; a histogram
// gives its _count.
func gather(t testing.TB, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
