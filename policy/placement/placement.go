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

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
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
	if v, ok := annotations[kfedv1alpha1.AnnotationClusters]; ok {
		p.Names = []string{}
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("annotation %s: %q is not a cluster name: %s", kfedv1alpha1.AnnotationClusters, name, msgs[0]))
				continue
			}
			if !slices.Contains(p.Names, name) {
				p.Names = append(p.Names, name)
			}
		}
		if len(p.Names) == 0 && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("annotation %s=%q names no cluster", kfedv1alpha1.AnnotationClusters, v))
		}
	}
	if name, ok := annotations[kfedv1alpha1.AnnotationPlacementDecision]; ok {
		if err := p.decided(name, annotations); err != nil {
			errs = append(errs, err)
		}
	}
	if v, ok := annotations[kfedv1alpha1.AnnotationClusterSelector]; ok {
		sel, err := labels.Parse(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s=%q: %w", kfedv1alpha1.AnnotationClusterSelector, v, err))
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

// Select returns the Clusters of clusters the placement puts an object in,
// in their order, and the names it gives that no Cluster of clusters has,
// in its order. A Cluster being deleted is in no placement (kfed is taking
// its copies away), but its name is not unknown. Every controller and the
// PlacementDecisions select with it, so a placement means one thing to all
// of them.
func (p Placement) Select(clusters []kfedv1alpha1.Cluster) (placed []*kfedv1alpha1.Cluster, unknown []string) {
	for i := range clusters {
		c := &clusters[i]
		region, _ := c.Location()
		if c.DeletionTimestamp == nil && p.Places(c.Name, region, c.Labels) {
			placed = append(placed, c)
		}
	}
	for _, name := range p.Names {
		if !slices.ContainsFunc(clusters, func(c kfedv1alpha1.Cluster) bool { return c.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	return placed, unknown
}

// decided reads the clusters that PlacementDecision name lists from
// kfedv1alpha1.AnnotationPlacementDecided. Until that record is written for this decision the
// object is placed nowhere: a decision not read yet must not spread the
// object to every cluster.
func (p *Placement) decided(name string, annotations map[string]string) error {
	name = strings.TrimSpace(name)
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("annotation %s: %q is not an object name: %s", kfedv1alpha1.AnnotationPlacementDecision, name, msgs[0])
	}
	if p.Names != nil {
		return fmt.Errorf("annotations %s and %s both name the clusters; keep one", kfedv1alpha1.AnnotationClusters, kfedv1alpha1.AnnotationPlacementDecision)
	}
	p.Decision, p.Names = name, []string{}
	decision, list, ok := strings.Cut(annotations[kfedv1alpha1.AnnotationPlacementDecided], "=")
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

// Decided is the value of kfedv1alpha1.AnnotationPlacementDecided for PlacementDecision name
// listing clusters.
func Decided(name string, clusters []string) string {
	return name + "=" + strings.Join(clusters, ",")
}
