// Package serviceconfig owns what a federated Service's kfed.io/*
// annotations ask of kfed: the record TTL, the placement and the health
// check. It reads annotations only, and is a package of its own so that its
// fuzz target's binary links no Kubernetes client: Go's fuzzer slows with
// every package a binary links (docs/reliability.md).
package serviceconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/placement"
)

// AnnotationTTL sets the record TTL in seconds.
const AnnotationTTL = "kfed.io/ttl"

// DefaultTTL is the record TTL when a Service does not set kfed.io/ttl; 30 s
// as k8gb, so a failed-over name is not cached long.
const DefaultTTL = 30

// MaxTTL is a week, the most any provider kfed writes to accepts.
const MaxTTL = 604800

// Config is what a federated Service's annotations ask of kfed.
type Config struct {
	// TTL of the Service's records, in seconds.
	TTL       int64
	Placement placement.Placement
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
	cfg := Config{TTL: DefaultTTL}
	if v, ok := annotations[AnnotationTTL]; ok {
		ttl, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s=%q: not a whole number of seconds", AnnotationTTL, v))
		case ttl < 1 || ttl > MaxTTL:
			errs = append(errs, fmt.Errorf("annotation %s=%q: must be between 1 and %d seconds", AnnotationTTL, v, MaxTTL))
		default:
			cfg.TTL = ttl
		}
	}
	p, err := placement.Parse(annotations)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Placement = p
	for k, v := range annotations {
		if strings.HasPrefix(k, healthcheck.AnnotationPrefix) {
			if cfg.Health == nil {
				cfg.Health = map[string]string{}
			}
			cfg.Health[k] = v
		}
	}
	if _, err := healthcheck.ParseAnnotations(cfg.Health, healthcheck.Defaults()); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}
