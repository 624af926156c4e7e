package serviceconfig

import (
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

func TestWithinDerivesATimingThatFits(t *testing.T) {
	for _, within := range []time.Duration{10 * time.Second, 15 * time.Second, 30 * time.Second, 66 * time.Second, 10 * time.Minute} {
		tm, err := Within(within)
		if err != nil {
			t.Errorf("Within(%v): %v", within, err)
			continue
		}
		spec := healthcheck.Spec{Kind: healthcheck.KindTCP, Interval: tm.Interval, Timeout: tm.Timeout, Rise: healthcheck.DefaultRise, Fall: tm.Fall}
		switch {
		case tm.WorstCase() > within:
			t.Errorf("Within(%v) = %v, which takes longer", within, tm)
		case spec.Validate() != nil:
			t.Errorf("Within(%v) = %v, which checkers refuse: %v", within, tm, spec.Validate())
		case tm.TTL < MinTTL || tm.TTL > DefaultTTL*time.Second || tm.Interval > healthcheck.DefaultInterval:
			t.Errorf("Within(%v) = %v, outside kfed's bounds", within, tm)
		}
	}
	if tm, _ := Within(30 * time.Second); tm.Fall != 3 || tm.TTL != 14*time.Second {
		t.Errorf("Within(30s) = %v, want three probes to trust and a 14s TTL", tm)
	}
}

func TestWithinRefusesWhatCannotBeMet(t *testing.T) {
	_, err := Within(5 * time.Second)
	if err == nil || !strings.Contains(err.Error(), "ask for 10s or more") {
		t.Fatalf("Within(5s): %v, want a refusal saying what can be met", err)
	}
	if _, err := Within(10 * time.Second); err != nil {
		t.Errorf("the bound the refusal offers cannot be met: %v", err)
	}
}

func TestParseFailoverWithin(t *testing.T) {
	failover := map[string]string{kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "a,b"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range failover {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name        string
		annotations map[string]string
		errHas      string
		ttl         int64
		interval    string
	}{
		{"derives the TTL and the probes", with(map[string]string{kfedv1alpha1.AnnotationFailoverWithin: "30s"}), "", 14, "3.6s"},
		{"keeps the Service's own TTL when it fits", with(map[string]string{kfedv1alpha1.AnnotationFailoverWithin: "30s", kfedv1alpha1.AnnotationTTL: "10"}), "", 10, "3.6s"},
		{"refuses the Service's own TTL when it does not fit", with(map[string]string{kfedv1alpha1.AnnotationFailoverWithin: "30s", kfedv1alpha1.AnnotationTTL: "60"}), "the Service's own TTL or probe settings take", 0, ""},
		{"refuses a bound it cannot meet", with(map[string]string{kfedv1alpha1.AnnotationFailoverWithin: "3s"}), "cannot fail over within 3s", 0, ""},
		{"refuses it without failover routing", map[string]string{kfedv1alpha1.AnnotationFailoverWithin: "30s"}, "applies only with kfed.io/routing: failover", 0, ""},
		{"refuses what is no duration", with(map[string]string{kfedv1alpha1.AnnotationFailoverWithin: "half a minute"}), "want a duration", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(tt.annotations)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.TTL != tt.ttl || cfg.Health[kfedv1alpha1.AnnotationHealthInterval] != tt.interval || cfg.Within == nil {
				t.Errorf("TTL %d, health %v, within %v; want TTL %d and interval %s", cfg.TTL, cfg.Health, cfg.Within, tt.ttl, tt.interval)
			}
		})
	}
}
