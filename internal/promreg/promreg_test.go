package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterReusesWhatIsThere(t *testing.T) {
	reg := prometheus.NewRegistry()
	newCounter := func() prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "kfed_test_total", Help: "test"})
	}
	first, err := Register(reg, newCounter())
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(reg, newCounter())
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Error("the second registration did not reuse the first collector")
	}
	// A collector of another type under the same name is an error.
	if _, err := Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "kfed_test_total", Help: "test"})); err == nil {
		t.Error("a gauge registered over a counter's name")
	}
}
