package deployments

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

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
	AnnotationClusters = "kfed.io/clusters"
	// AnnotationClusterSelector places the Deployment in clusters whose
	// labels match this label selector; each cluster also has the implicit
	// label kfed.io/region=<its region>.
	AnnotationClusterSelector = "kfed.io/cluster-selector"
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
	prefs    planner.Preferences
	clusters []string        // nil: no name restriction
	selector labels.Selector // nil: no label restriction
	adopt    bool
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
	if v, ok := d.Annotations[AnnotationClusters]; ok {
		cfg.clusters = []string{}
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("annotation %s: %q is not a cluster name: %s", AnnotationClusters, name, msgs[0]))
				continue
			}
			if !slices.Contains(cfg.clusters, name) {
				cfg.clusters = append(cfg.clusters, name)
			}
		}
		if len(cfg.clusters) == 0 && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("annotation %s=%q names no cluster", AnnotationClusters, v))
		}
	}
	if v, ok := d.Annotations[AnnotationClusterSelector]; ok {
		sel, err := labels.Parse(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s=%q: %w", AnnotationClusterSelector, v, err))
		} else {
			cfg.selector = sel
		}
	}
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
	if cfg.clusters != nil && !slices.Contains(cfg.clusters, c.Name) {
		return false
	}
	if cfg.selector != nil {
		set := labels.Set{"kfed.io/region": c.Region}
		for k, v := range c.Labels {
			set[k] = v
		}
		return cfg.selector.Matches(set)
	}
	return true
}
