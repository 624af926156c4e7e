package serviceconfig

import (
	"fmt"
	"strconv"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// Propagation is the time kfed takes, once a quorum of checkers has seen an
// endpoint fail, to answer without it: the agents' report debounce and
// write, a reconcile, the DNSEndpoint write, and the CoreDNS plugin's watch
// or the DNS sync's debounce and an RFC 2136 update (measured: BENCHMARKS.md,
// health checks end to end). Route53's and Cloud DNS's own propagation to
// their servers comes on top, and is theirs.
const Propagation = 2 * time.Second

// DefaultTTL is the record TTL when a Service does not set kfed.io/ttl; 30 s
// as k8gb, so a failed-over name is not cached long.
const DefaultTTL = 30

// MinTTL is the lowest record TTL kfed derives: resolvers and clients that
// refresh more often than this add load and little speed.
const MinTTL = 5 * time.Second

// Timing is how fast a Service's failures are seen and forgotten.
type Timing struct {
	Interval, Timeout time.Duration
	Fall              int
	TTL               time.Duration
}

// WorstCase is the longest a client may still be sent to an endpoint after
// it fails: the failure right after a passing probe, Fall failing rounds
// each up to MaxJitter late, the last one taking Timeout, then Propagation,
// then a resolver answering from its cache for a whole TTL.
func (t Timing) WorstCase() time.Duration {
	rounds := time.Duration(float64(time.Duration(t.Fall)*t.Interval) * (1 + healthcheck.MaxJitter))
	return rounds + t.Timeout + Propagation + t.TTL
}

func (t Timing) String() string {
	return fmt.Sprintf("%v worst case: %d probes every %v (timeout %v), %v to publish, TTL %v",
		t.WorstCase().Round(100*time.Millisecond), t.Fall, t.Interval, t.Timeout, Propagation, t.TTL)
}

// Within derives a Timing whose worst case is within, or says why none is:
// half of what publishing leaves goes to the TTL (5 to 30 s), the rest to
// detection, with three failing probes where the interval can stay at a
// second or more, else two, and a timeout of half the interval (at most the
// default 4 s).
func Within(within time.Duration) (Timing, error) {
	budget := within - Propagation
	ttl := min(max(budget/2, MinTTL), DefaultTTL*time.Second).Truncate(time.Second)
	detect := budget - ttl
	for _, fall := range []int{healthcheck.DefaultFall, 2} {
		per := float64(fall)*(1+healthcheck.MaxJitter) + 0.5 // timeout: half an interval
		interval := time.Duration(float64(detect) / per)
		timeout := interval / 2
		if timeout > healthcheck.DefaultTimeout {
			timeout = healthcheck.DefaultTimeout
			interval = time.Duration(float64(detect-timeout) / (float64(fall) * (1 + healthcheck.MaxJitter)))
		}
		interval = min(interval, healthcheck.DefaultInterval).Truncate(100 * time.Millisecond)
		timeout = min(timeout, interval/2).Truncate(10 * time.Millisecond)
		if interval < healthcheck.MinInterval {
			continue
		}
		t := Timing{Interval: interval, Timeout: timeout, Fall: fall, TTL: ttl}
		if t.WorstCase() <= within {
			return t, nil
		}
	}
	least := Timing{Interval: healthcheck.MinInterval, Timeout: healthcheck.MinInterval / 2, Fall: 2, TTL: MinTTL}.WorstCase()
	ceil := (least + time.Second - 1).Truncate(time.Second)
	return Timing{}, fmt.Errorf("cannot fail over within %v: probing every %v with two failures to trust, %v to publish and a TTL of %v take %v; ask for %v or more",
		within, healthcheck.MinInterval, Propagation, MinTTL, least.Round(100*time.Millisecond), ceil)
}

// timingWithin derives the TTL and health settings from within, or checks
// the ones the annotations set themselves against it: ttl is the TTL read
// from kfed.io/ttl and health the Service's kfed.io/health-* annotations.
// Nil and no error when the health annotations do not read, which Parse
// reports.
func timingWithin(annotations map[string]string, within time.Duration, ttl int64, health map[string]string) (*Timing, error) {
	derived, err := Within(within)
	if err != nil {
		return nil, fmt.Errorf("annotation %s=%v: %w", kfedv1alpha1.AnnotationFailoverWithin, within, err)
	}
	spec, err := healthcheck.ParseAnnotations(health, healthcheck.Defaults())
	if err != nil {
		return nil, nil // reported by Parse
	}
	t := derived
	_, ownTTL := annotations[kfedv1alpha1.AnnotationTTL]
	if ownTTL {
		t.TTL = time.Duration(ttl) * time.Second
	}
	set := map[string]bool{}
	for _, a := range []string{kfedv1alpha1.AnnotationHealthInterval, kfedv1alpha1.AnnotationHealthTimeout, kfedv1alpha1.AnnotationHealthFall} {
		_, set[a] = health[a]
	}
	if set[kfedv1alpha1.AnnotationHealthInterval] {
		t.Interval = spec.Interval
	}
	if set[kfedv1alpha1.AnnotationHealthTimeout] {
		t.Timeout = spec.Timeout
	}
	if set[kfedv1alpha1.AnnotationHealthFall] {
		t.Fall = spec.Fall
	}
	if t.Timeout >= t.Interval {
		t.Timeout = min(derived.Timeout, t.Interval/2)
	}
	if t.WorstCase() > within {
		return nil, fmt.Errorf("annotation %s=%v: the Service's own TTL or probe settings take %v; remove them and kfed derives some that fit (%v)",
			kfedv1alpha1.AnnotationFailoverWithin, within, t.WorstCase().Round(100*time.Millisecond), derived)
	}
	return &t, nil
}

// healthAnnotations are t's probe settings as the kfed.io/health-*
// annotations the checkers read.
func (t Timing) healthAnnotations() map[string]string {
	return map[string]string{
		kfedv1alpha1.AnnotationHealthInterval: t.Interval.String(),
		kfedv1alpha1.AnnotationHealthTimeout:  t.Timeout.String(),
		kfedv1alpha1.AnnotationHealthFall:     strconv.Itoa(t.Fall),
	}
}
