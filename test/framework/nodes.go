package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/retry"
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

// SetNodeCPU sets the cpu capacity and allocatable of every simulated node
// of cluster, as a smaller or larger machine would report. Pods already
// running stay; the scheduler places new ones against the new size, and
// retries pods it could not place when nodes grow.
func (f *Federation) SetNodeCPU(cluster, cpu string) {
	f.t.Helper()
	ctx := context.Background()
	c := f.Client(cluster)
	q := resource.MustParse(cpu)
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		f.t.Fatal(err)
	}
	for i := range nodes.Items {
		name := nodes.Items[i].Name
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var n corev1.Node
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
				return err
			}
			n.Status.Capacity[corev1.ResourceCPU] = q
			n.Status.Allocatable[corev1.ResourceCPU] = q
			return c.Status().Update(ctx, &n)
		})
		if err != nil {
			f.t.Fatalf("setting the cpu of node %s to %s: %v", name, cpu, err)
		}
	}
}
