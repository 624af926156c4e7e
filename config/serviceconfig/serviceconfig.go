// Package serviceconfig owns what a federated Service's kfed.io/*
// annotations ask of kfed: the record TTL, the placement and the health
// check. It reads annotations only, and is a package of its own so that its
// fuzz target's binary links no Kubernetes client: Go's fuzzer slows with
// every package a binary links (docs/reliability.md).
package serviceconfig

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/policy/failover"
	"github.com/kfed-io/kfed/policy/placement"
)

// MaxTTL is a week, the most any provider kfed writes to accepts.
const MaxTTL = 604800

// Routing is how clients are sent among a Service's clusters.
type Routing string

const (
	// RoutingWeighted answers every healthy cluster, by weight (the default).
	RoutingWeighted Routing = "weighted"
	// RoutingProximity answers the nearest healthy cluster first.
	RoutingProximity Routing = "proximity"
	// RoutingFailover answers only the first place of an order that is up.
	RoutingFailover Routing = "failover"
)

// Config is what a federated Service's annotations ask of kfed.
type Config struct {
	// TTL of the Service's records, in seconds.
	TTL       int64
	Placement placement.Placement
	Routing   Routing
	// Failover is the active/passive policy, with Routing failover.
	Failover failover.Policy
	// Within is the timing derived from kfed.io/failover-within, nil
	// without it; its settings are in TTL and Health too.
	Within *Timing
	// Health holds the Service's kfed.io/health-* annotations, checked; the
	// checkers read them from the DNSEndpoint and fill in their own
	// defaults. Nil when there are none.
	Health map[string]string
}

// Parse reads and checks a federated Service's kfed.io/* annotations. All
// problems are reported together, each naming its annotation, so a user
// fixes them in one go; the Config holds what could be read, defaults in
// place of the rest.
func Parse(annotations map[string]string) (Config, error) {
	var errs []error
	cfg := Config{TTL: DefaultTTL, Routing: RoutingWeighted}
	if v, ok := annotations[kfedv1alpha1.AnnotationTTL]; ok {
		ttl, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s=%q: not a whole number of seconds", kfedv1alpha1.AnnotationTTL, v))
		case ttl < 1 || ttl > MaxTTL:
			errs = append(errs, fmt.Errorf("annotation %s=%q: must be between 1 and %d seconds", kfedv1alpha1.AnnotationTTL, v, MaxTTL))
		default:
			cfg.TTL = ttl
		}
	}
	if err := parseRouting(annotations, &cfg); err != nil {
		errs = append(errs, err)
	}
	p, err := placement.Parse(annotations)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Placement = p
	for k, v := range annotations {
		if strings.HasPrefix(k, kfedv1alpha1.AnnotationHealthPrefix) {
			if cfg.Health == nil {
				cfg.Health = map[string]string{}
			}
			cfg.Health[k] = v
		}
	}
	if _, err := healthcheck.ParseAnnotations(cfg.Health, healthcheck.Defaults()); err != nil {
		errs = append(errs, err)
	}
	if v, ok := annotations[kfedv1alpha1.AnnotationFailoverWithin]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil || d <= 0:
			errs = append(errs, fmt.Errorf("annotation %s=%q: want a duration such as 30s", kfedv1alpha1.AnnotationFailoverWithin, v))
		case cfg.Routing != RoutingFailover:
			errs = append(errs, fmt.Errorf("annotation %s applies only with %s: %s", kfedv1alpha1.AnnotationFailoverWithin, kfedv1alpha1.AnnotationRouting, RoutingFailover))
		default:
			t, err := timingWithin(annotations, d, cfg.TTL, cfg.Health)
			switch {
			case err != nil:
				errs = append(errs, err)
			case t != nil:
				cfg.TTL = int64(t.TTL / time.Second)
				if cfg.Health == nil {
					cfg.Health = map[string]string{}
				}
				maps.Copy(cfg.Health, t.healthAnnotations())
				cfg.Within = t
			}
		}
	}
	return cfg, errors.Join(errs...)
}

// parseRouting reads the routing annotations into cfg.
func parseRouting(annotations map[string]string, cfg *Config) error {
	var errs []error
	if v, ok := annotations[kfedv1alpha1.AnnotationRouting]; ok {
		switch r := Routing(strings.TrimSpace(v)); r {
		case RoutingWeighted, RoutingProximity, RoutingFailover:
			cfg.Routing = r
		default:
			errs = append(errs, fmt.Errorf("annotation %s=%q: want %s, %s or %s", kfedv1alpha1.AnnotationRouting, v, RoutingWeighted, RoutingProximity, RoutingFailover))
		}
	}
	order, hasOrder := annotations[kfedv1alpha1.AnnotationFailoverOrder]
	for _, p := range strings.Split(order, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if msgs := validation.IsDNS1123Label(p); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("annotation %s: %q is not a region, zone or cluster name: %s", kfedv1alpha1.AnnotationFailoverOrder, p, strings.Join(msgs, "; ")))
			continue
		}
		if slices.Contains(cfg.Failover.Order, p) {
			errs = append(errs, fmt.Errorf("annotation %s: %q is listed twice", kfedv1alpha1.AnnotationFailoverOrder, p))
			continue
		}
		cfg.Failover.Order = append(cfg.Failover.Order, p)
	}
	switch {
	case cfg.Routing == RoutingFailover && len(cfg.Failover.Order) == 0:
		errs = append(errs, fmt.Errorf("annotation %s: failover needs %s, the places in the order they serve", kfedv1alpha1.AnnotationRouting, kfedv1alpha1.AnnotationFailoverOrder))
	case cfg.Routing != RoutingFailover && hasOrder:
		errs = append(errs, fmt.Errorf("annotation %s applies only with %s: %s", kfedv1alpha1.AnnotationFailoverOrder, kfedv1alpha1.AnnotationRouting, RoutingFailover))
	}
	cfg.Failover.Hold = failover.DefaultHold
	if v, ok := annotations[kfedv1alpha1.AnnotationFailbackHold]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 || d > 24*time.Hour {
			errs = append(errs, fmt.Errorf("annotation %s=%q: want a duration from 0s to 24h", kfedv1alpha1.AnnotationFailbackHold, v))
		} else {
			cfg.Failover.Hold = d
		}
	}
	if v, ok := annotations[kfedv1alpha1.AnnotationFailoverPin]; ok {
		pin := strings.TrimSpace(v)
		if !slices.Contains(cfg.Failover.Order, pin) {
			errs = append(errs, fmt.Errorf("annotation %s=%q: not a place of %s %v", kfedv1alpha1.AnnotationFailoverPin, v, kfedv1alpha1.AnnotationFailoverOrder, cfg.Failover.Order))
		} else {
			cfg.Failover.Pin = pin
		}
	}
	return errors.Join(errs...)
}
