package health

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// healthDetectionLatency (TestHealthDetectionLatency) measures, end to end on
// the real test bed, the time from a load balancer refusing connections to the
// kfed plugin's first answer without its address, and from it accepting again
// to the first answer with it. `make test` runs 2 trials at interval 1 s, fall
// 2 and checks the issue's bound, p95 ≤ interval × fall + 1 s; `make
// bench-health` (KFED_HEALTH_TRIALS=20, KFED_HEALTH_DEFAULTS=1) runs 20 at
// those settings and 20 at the defaults (10 s, 4 s, fall 3, rise 2) and prints
// p50/p95/max for BENCHMARKS.md.
func healthDetectionLatency(t *testing.T, shared *healthBed) {
	trials := 2
	if v := os.Getenv("KFED_HEALTH_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KFED_HEALTH_TRIALS=%q: not a positive number", v)
		}
		trials = n
	}
	// The shared bed has fastHC's settings; the defaults get a bed of their own.
	settings := []struct {
		name   string
		hc     hcSettings
		ownBed bool
	}{{"interval 1s, fall 2, rise 2", fastHC, false}}
	if os.Getenv("KFED_HEALTH_DEFAULTS") != "" {
		settings = append(settings, struct {
			name   string
			hc     hcSettings
			ownBed bool
		}{"defaults: interval 10s, timeout 4s, fall 3, rise 2", hcSettings{interval: 10 * time.Second, timeout: 4 * time.Second, fall: 3, rise: 2, freshness: 40 * time.Second}, true})
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			b := shared
			if s.ownBed {
				b = startHealthBed(t, s.hc)
			}
			all := slices.Clone(b.lb)
			var out, back []time.Duration
			bound := s.hc.interval*time.Duration(s.hc.fall) + time.Second
			for i := range trials {
				victim := i % len(b.lb)
				rest := slices.Delete(slices.Clone(all), victim, victim+1)
				b.fail(t, victim, "refuse")
				out = append(out, measure(t, bound+time.Minute, func() error { return b.answers(rest...) }))
				b.fail(t, victim, "")
				back = append(back, measure(t, bound+time.Minute, func() error { return b.answers(all...) }))
			}
			for _, r := range []struct {
				what string
				d    []time.Duration
			}{{"failure → address gone", out}, {"recovery → address back", back}} {
				p50, p95, mx := percentiles(r.d)
				t.Logf("%s (%s), %d trials: p50 %v, p95 %v, max %v", r.what, s.name, len(r.d), p50, p95, mx)
				if r.what == "failure → address gone" && p95 > bound {
					t.Errorf("p95 %v over the bound interval × fall + 1 s = %v", p95, bound)
				}
			}
		})
	}
}

// measure returns how long check takes to pass, polling every 10 ms.
func measure(t *testing.T, limit time.Duration, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < limit {
		if err = check(); err == nil {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not within %v: %v", limit, err)
	return 0
}

func percentiles(d []time.Duration) (p50, p95, highest time.Duration) {
	s := slices.Sorted(slices.Values(d))
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)].Round(10 * time.Millisecond)
	}
	return at(0.5), at(0.95), s[len(s)-1].Round(10 * time.Millisecond)
}
