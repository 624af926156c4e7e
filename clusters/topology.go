package clusters

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Topology returns the region and zones of a member's nodes, from their
// topology.kubernetes.io/region and topology.kubernetes.io/zone labels
// (Ubernetes-Lite: one cluster over several zones): the most common region
// (the first by name on a tie), and every zone, sorted. Nodes without the
// labels count for nothing.
func Topology(nodes []corev1.Node) (region string, zones []string) {
	regions := map[string]int{}
	for _, n := range nodes {
		if r := n.Labels[corev1.LabelTopologyRegion]; r != "" {
			regions[r]++
		}
		if z := n.Labels[corev1.LabelTopologyZone]; z != "" && !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	for r, n := range regions {
		if n > regions[region] || (n == regions[region] && r < region) {
			region = r
		}
	}
	slices.Sort(zones)
	return region, zones
}

// NodeTopology lists the member's nodes and returns their Topology.
func NodeTopology(ctx context.Context, cfg *rest.Config) (region string, zones []string, err error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	// ResourceVersion "0" is served from the API server's watch cache.
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return "", nil, fmt.Errorf("listing nodes: %w", err)
	}
	region, zones = Topology(list.Items)
	return region, zones, nil
}
