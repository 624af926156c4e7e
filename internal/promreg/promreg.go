// Package promreg registers Prometheus collectors so that registering one
// whose name is already taken reuses the collector already there. Several
// managers, engines or syncers run in one process in tests and in
// `kfed dev up`, and each registers the same collectors on the same registry.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or, when a collector of the
// same description is already registered and of c's type, that one.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
