package planner

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Limits on the numbers the planner accepts. Replica counts share the range
// of a Kubernetes Deployment's replicas (int32). Weights are relative, and a
// bound keeps the planner's exact arithmetic and its running time bounded;
// a million still expresses a share of one in a million.
const (
	MaxReplicas = math.MaxInt32
	MaxWeight   = 1_000_000
)

// AnyCluster is the preferences key that applies to every cluster without an
// entry of its own.
const AnyCluster = "*"

// ClusterPreferences are one cluster's entry in Preferences. With the
// Balancer policies only MinReplicas and MaxReplicas apply.
type ClusterPreferences struct {
	// MinReplicas the cluster gets before any replica is shared by weight.
	MinReplicas int64 `json:"minReplicas"`
	// MaxReplicas caps the cluster; nil means no cap.
	MaxReplicas *int64 `json:"maxReplicas"`
	// Weight is the cluster's relative share of the replicas left after
	// every minimum is met. Zero means it gets its minimum and no more.
	Weight int64 `json:"weight"`
}

// Preferences is the value of the kfed.io/replica-preferences annotation.
type Preferences struct {
	// Rebalance lets the planner move running replicas to reach the weighted
	// layout. Without it replicas stay where they run, and only new replicas
	// (or, on a scale-down, the clusters furthest above their share) change.
	Rebalance bool `json:"rebalance"`
	// Clusters maps a cluster name, or AnyCluster, to its preferences.
	Clusters map[string]ClusterPreferences `json:"clusters"`
}

// ParsePreferences decodes and validates the JSON of the
// kfed.io/replica-preferences annotation. Unknown fields are errors, so a
// misspelt "maxReplica" is reported instead of silently meaning "no cap".
func ParsePreferences(data []byte) (Preferences, error) {
	var p Preferences
	if err := decodeStrict(data, &p, preferencesFields); err != nil {
		return Preferences{}, fmt.Errorf("decoding replica preferences: %w", err)
	}
	if err := p.Validate(); err != nil {
		return Preferences{}, fmt.Errorf("invalid replica preferences: %w", err)
	}
	return p, nil
}

// Validate reports the first problem with p, naming the cluster entry.
func (p Preferences) Validate() error { return validateEntries(p.Clusters) }

// For returns the preferences that apply to cluster and whether any do: its
// own entry, else the AnyCluster entry.
func (p Preferences) For(cluster string) (ClusterPreferences, bool) {
	if c, ok := p.Clusters[cluster]; ok {
		return c, true
	}
	c, ok := p.Clusters[AnyCluster]
	return c, ok
}

func validateEntries(entries map[string]ClusterPreferences) error {
	name, err := firstError(entries, func(name string, c ClusterPreferences) error { return c.validate() })
	switch {
	case err == nil:
		return nil
	case name == "":
		return errors.New(`preferences: empty cluster name (use "*" for every cluster)`)
	}
	return fmt.Errorf("preferences[%q]: %w", name, err)
}

// firstError runs check on every entry of m and returns the error of the
// first failing entry in name order, so that the same input always reports
// the same problem. An empty name fails without a check.
func firstError[V any](m map[string]V, check func(string, V) error) (string, error) {
	var bad string
	var err error
	for name, v := range m {
		e := errEmptyName
		if name != "" {
			e = check(name, v)
		}
		if e != nil && (err == nil || name < bad) {
			bad, err = name, e
		}
	}
	return bad, err
}

var errEmptyName = errors.New("empty name")

func (c ClusterPreferences) validate() error {
	if err := checkCount("minReplicas", c.MinReplicas); err != nil {
		return err
	}
	if c.MaxReplicas != nil {
		if err := checkCount("maxReplicas", *c.MaxReplicas); err != nil {
			return err
		}
		if *c.MaxReplicas < c.MinReplicas {
			return fmt.Errorf("maxReplicas %d is less than minReplicas %d", *c.MaxReplicas, c.MinReplicas)
		}
	}
	return checkWeight("weight", c.Weight)
}

// checkCount validates a replica count.
func checkCount(what string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%s %d is negative", what, n)
	}
	if n > MaxReplicas {
		return fmt.Errorf("%s %d is above the limit of %d", what, n, MaxReplicas)
	}
	return nil
}

// checkWeight validates a weight or proportion.
func checkWeight(what string, w int64) error {
	if w < 0 {
		return fmt.Errorf("%s %d is negative", what, w)
	}
	if w > MaxWeight {
		return fmt.Errorf("%s %d is above the limit of %d (weights are relative: divide them all by a common factor)", what, w, MaxWeight)
	}
	return nil
}

// checkCounts validates a map of replica counts, such as capacity.
func checkCounts(field string, m map[string]int64) error {
	name, err := firstError(m, func(_ string, n int64) error { return checkCount("", n) })
	switch {
	case err == nil:
		return nil
	case name == "":
		return fmt.Errorf("%s: empty cluster name", field)
	}
	return checkCount(fmt.Sprintf("%s[%q]", field, name), m[name])
}

// checkClusters validates a cluster list: names are non-empty, unique and
// not the AnyCluster key.
func checkClusters(clusters []string) error {
	if err := checkClusterNames(clusters); err != nil {
		return err
	}
	seen := make(map[string]bool, len(clusters))
	for i, name := range clusters {
		if seen[name] {
			return fmt.Errorf("clusters[%d]: %q is listed twice", i, name)
		}
		seen[name] = true
	}
	return nil
}

// checkClusterNames checks each name of a cluster list on its own.
func checkClusterNames(clusters []string) error {
	for i, name := range clusters {
		switch {
		case strings.TrimSpace(name) == "":
			return fmt.Errorf("clusters[%d]: empty cluster name", i)
		case name == AnyCluster:
			return fmt.Errorf("clusters[%d]: %q is not a cluster name; it only keys preferences", i, name)
		}
	}
	return nil
}
