package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetZoneSchedulable cordons (false) or uncordons (true) every node of zone
// in cluster, as `kubectl cordon` does: pods already running stay, new ones
// cannot be scheduled there. It stands for a zone without capacity.
func (f *Federation) SetZoneSchedulable(cluster, zone string, schedulable bool) {
	f.t.Helper()
	ctx := context.Background()
	c := f.Client(cluster)
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{corev1.LabelTopologyZone: zone}); err != nil {
		f.t.Fatal(err)
	}
	if len(nodes.Items) == 0 {
		f.t.Fatalf("no nodes in zone %s of %s", zone, cluster)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		patch := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = !schedulable
		if err := c.Patch(ctx, n, patch); err != nil {
			f.t.Fatalf("setting node %s unschedulable=%v: %v", n.Name, !schedulable, err)
		}
	}
}
