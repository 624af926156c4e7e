package deployments

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kfed-io/kfed/placement"
	"github.com/kfed-io/kfed/replicas/planner"
)

// Annotations users put on a control-plane Deployment.
const (
	// AnnotationPreferences opts a Deployment in, with the JSON of the
	// Federated ReplicaSet preferences (planner.Preferences).
	AnnotationPreferences = "kfed.io/replica-preferences"
	// AnnotationFederated: "true" opts a Deployment in with an even spread
	// over its clusters.
	AnnotationFederated = "kfed.io/federated"
	// AnnotationClusters places the Deployment in the named clusters only
	// (comma-separated), as for federated Services.
	AnnotationClusters = placement.AnnotationClusters
	// AnnotationClusterSelector places the Deployment in clusters whose
	// labels match this label selector; each cluster also has the implicit
	// label kfed.io/region=<its region>.
	AnnotationClusterSelector = placement.AnnotationClusterSelector
	// AnnotationAdoptExisting: "true" lets kfed take over a member
	// Deployment of the same name that it did not create. Without it such
	// a Deployment is a conflict and is left alone.
	AnnotationAdoptExisting = "kfed.io/adopt-existing"
)

// evenSpread is what kfed.io/federated: "true" without preferences means.
var evenSpread = planner.Preferences{
	Rebalance: true,
	Clusters:  map[string]planner.ClusterPreferences{planner.AnyCluster: {Weight: 1}},
}

// IsFederated reports whether d opted in to federation.
func IsFederated(d *appsv1.Deployment) bool {
	_, ok := d.Annotations[AnnotationPreferences]
	return ok || d.Annotations[AnnotationFederated] == "true"
}

// config is what a Deployment's annotations ask of kfed.
type config struct {
	prefs     planner.Preferences
	placement placement.Placement
	adopt     bool
}

// parseConfig reads and checks a federated Deployment's annotations. All
// problems are reported together, so a user fixes them in one go.
func parseConfig(d *appsv1.Deployment) (config, error) {
	var errs []error
	cfg := config{prefs: evenSpread}
	if v, ok := d.Annotations[AnnotationPreferences]; ok {
		p, err := planner.ParsePreferences([]byte(v))
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", AnnotationPreferences, err))
		} else {
			cfg.prefs = p
		}
	}
	p, err := placement.Parse(d.Annotations)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.placement = p
	switch v, ok := d.Annotations[AnnotationAdoptExisting]; {
	case !ok || v == "false":
	case v == "true":
		cfg.adopt = true
	default:
		errs = append(errs, fmt.Errorf("annotation %s=%q: want \"true\" or \"false\"", AnnotationAdoptExisting, v))
	}
	return cfg, errors.Join(errs...)
}

// clusterInfo is what placement needs to know of a Ready member.
type clusterInfo struct {
	Name   string
	Region string
	Labels map[string]string
}

// places reports whether cfg places the Deployment in cluster c.
func (cfg config) places(c clusterInfo) bool {
	return cfg.placement.Places(c.Name, c.Region, c.Labels)
}
