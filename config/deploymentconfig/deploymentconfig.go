// Package deploymentconfig owns what a federated Deployment's kfed.io/*
// annotations ask of kfed: the replica preferences, the placement, adoption
// of an existing member Deployment and the unschedulable threshold. It
// reads annotations only, and is a package of its own so that its fuzz
// target's binary links no Kubernetes client: Go's fuzzer slows with every
// package a binary links (docs/reliability.md).
package deploymentconfig

import (
	"errors"
	"fmt"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/placement"
	"github.com/kfed-io/kfed/policy/planner"
)

// EvenSpread is what kfed.io/federated: "true" without preferences means:
// every cluster weighs the same, and replicas move to keep it so.
func EvenSpread() planner.Preferences {
	return planner.Preferences{
		Rebalance: true,
		Clusters:  map[string]planner.ClusterPreferences{planner.AnyCluster: {Weight: 1}},
	}
}

// Config is what a federated Deployment's annotations ask of kfed.
type Config struct {
	// Preferences plan the replicas; EvenSpread when not annotated.
	Preferences planner.Preferences
	Placement   placement.Placement
	// Adopt lets kfed take over member Deployments it did not create.
	Adopt bool
	// UnschedulableThreshold is the annotated threshold, 0 when the
	// Deployment leaves it to the controller's default.
	UnschedulableThreshold time.Duration
}

// Parse reads and checks a federated Deployment's kfed.io/* annotations. All
// problems are reported together, each naming its annotation, so a user
// fixes them in one go.
func Parse(annotations map[string]string) (Config, error) {
	var errs []error
	cfg := Config{Preferences: EvenSpread()}
	if v, ok := annotations[kfedv1alpha1.AnnotationReplicaPreferences]; ok {
		p, err := planner.ParsePreferences([]byte(v))
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", kfedv1alpha1.AnnotationReplicaPreferences, err))
		} else {
			cfg.Preferences = p
		}
	}
	p, err := placement.Parse(annotations)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Placement = p
	switch v, ok := annotations[kfedv1alpha1.AnnotationAdoptExisting]; {
	case !ok || v == "false":
	case v == "true":
		cfg.Adopt = true
	default:
		errs = append(errs, fmt.Errorf("annotation %s=%q: want \"true\" or \"false\"", kfedv1alpha1.AnnotationAdoptExisting, v))
	}
	if v, ok := annotations[kfedv1alpha1.AnnotationUnschedulableThreshold]; ok {
		t, err := time.ParseDuration(v)
		if err != nil || t <= 0 {
			errs = append(errs, fmt.Errorf("annotation %s=%q: want a positive duration such as \"30s\"", kfedv1alpha1.AnnotationUnschedulableThreshold, v))
		} else {
			cfg.UnschedulableThreshold = t
		}
	}
	return cfg, errors.Join(errs...)
}
