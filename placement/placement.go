// Package placement owns the annotations that put a federated object (a
// Service, a Deployment) in some member clusters only: kfed.io/clusters,
// kfed.io/cluster-selector and kfed.io/placement-decision, how they are read
// and checked, and which clusters they select.
package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Annotations that place a federated object (a Service, a Deployment) in
// some member clusters only; without them it is placed in every one.
const (
	// AnnotationClusters names the clusters (comma-separated).
	AnnotationClusters = "kfed.io/clusters"
	// AnnotationClusterSelector is a label selector on Cluster labels; each
	// cluster also has the implicit label kfed.io/region=<its region>.
	AnnotationClusterSelector = "kfed.io/cluster-selector"
	// AnnotationPlacementDecision names a PlacementDecision
	// (multicluster.x-k8s.io, KEP-5313) in the object's namespace: a fleet
	// scheduler decides the clusters, kfed carries the decision out. It
	// replaces AnnotationClusters; a selector still narrows it.
	AnnotationPlacementDecision = "kfed.io/placement-decision"
	// AnnotationDecided is kfed's own record, on the object, of the
	// clusters the named decision lists: "DECISION=c1,c2". kfed's inventory
	// controller keeps it as the decision changes, and writing it is what
	// makes every controller that places the object act on the change.
	AnnotationDecided = "kfed.io/placement-decided"
)

// Placement is where an object's placement annotations put it.
type Placement struct {
	// Names are the clusters named, nil when no name restricts it.
	Names []string
	// Selector matches Cluster labels, nil when no label restricts it.
	Selector labels.Selector
	// Decision names the PlacementDecision that gives Names, "" when none.
	Decision string
}

// Parse reads an object's placement annotations. Every problem is
// reported, each naming the annotation and its value.
func Parse(annotations map[string]string) (Placement, error) {
	var p Placement
	var errs []error
	if v, ok := annotations[AnnotationClusters]; ok {
		p.Names = []string{}
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("annotation %s: %q is not a cluster name: %s", AnnotationClusters, name, msgs[0]))
				continue
			}
			if !slices.Contains(p.Names, name) {
				p.Names = append(p.Names, name)
			}
		}
		if len(p.Names) == 0 && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("annotation %s=%q names no cluster", AnnotationClusters, v))
		}
	}
	if name, ok := annotations[AnnotationPlacementDecision]; ok {
		if err := p.decided(name, annotations); err != nil {
			errs = append(errs, err)
		}
	}
	if v, ok := annotations[AnnotationClusterSelector]; ok {
		sel, err := labels.Parse(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s=%q: %w", AnnotationClusterSelector, v, err))
		} else {
			p.Selector = sel
		}
	}
	return p, errors.Join(errs...)
}

// Places reports whether the placement puts an object in the cluster named
// name, in region, with Cluster labels clusterLabels.
func (p Placement) Places(name, region string, clusterLabels map[string]string) bool {
	if p.Names != nil && !slices.Contains(p.Names, name) {
		return false
	}
	if p.Selector == nil {
		return true
	}
	set := labels.Set{"kfed.io/region": region}
	for k, v := range clusterLabels {
		set[k] = v
	}
	return p.Selector.Matches(set)
}

// decided reads the clusters that PlacementDecision name lists from
// AnnotationDecided. Until that record is written for this decision the
// object is placed nowhere: a decision not read yet must not spread the
// object to every cluster.
func (p *Placement) decided(name string, annotations map[string]string) error {
	name = strings.TrimSpace(name)
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("annotation %s: %q is not an object name: %s", AnnotationPlacementDecision, name, msgs[0])
	}
	if p.Names != nil {
		return fmt.Errorf("annotations %s and %s both name the clusters; keep one", AnnotationClusters, AnnotationPlacementDecision)
	}
	p.Decision, p.Names = name, []string{}
	decision, list, ok := strings.Cut(annotations[AnnotationDecided], "=")
	if !ok || decision != name {
		return nil
	}
	for _, c := range strings.Split(list, ",") {
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(p.Names, c) {
			p.Names = append(p.Names, c)
		}
	}
	return nil
}

// Decided is the value of AnnotationDecided for PlacementDecision name
// listing clusters.
func Decided(name string, clusters []string) string {
	return name + "=" + strings.Join(clusters, ",")
}
