package deployments

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/config/deploymentconfig"
)

// observation is what one reconcile read of the world for a federated
// Deployment: its preferences, the Ready members and their copies, how full
// each is, the unreachable members that keep their replicas.
type observation struct {
	// in is what decide plans from.
	in planInput
	// members are the Ready members, in the order to write them.
	members []registry.Member
	// existing are the members' Deployments of d's name.
	existing map[string]*appsv1.Deployment
	// failed holds, per cluster ("" for the control plane), what could not
	// be read; such a cluster is neither planned nor written.
	failed map[string]string
	// invalid is the problem with d's annotations: nothing is planned.
	invalid error
	// due is when the next unschedulable pod crosses the threshold, or an
	// unreachable member's grace period ends; 0 if never.
	due time.Duration
	// controlPlaneWorkloads names a ReplicaSet of d found in the control
	// plane, "" if none.
	controlPlaneWorkloads string
}

// observer reads what a federated Deployment's plan depends on, from the
// control plane (fed) and the Ready members (ready); federation names the
// federation whose copies are kfed's. threshold and grace are the
// controller's unschedulable threshold and grace period, defaulted where
// they are used.
type observer struct {
	fed              client.Reader
	ready            []registry.Member
	federation       string
	threshold, grace time.Duration
	clock            clock.PassiveClock
}

// observe reads what d's plan depends on.
func (r observer) observe(ctx context.Context, d *appsv1.Deployment) observation {
	obs := observation{controlPlaneWorkloads: r.controlPlaneReplicaSet(ctx, d)}
	cfg, err := deploymentconfig.Parse(d.Annotations)
	if err != nil {
		// Bad input freezes the copies as they are until the user fixes it.
		obs.invalid = err
		return obs
	}
	origin := d.Namespace + "/" + d.Name
	obs.members = r.ready
	obs.existing = map[string]*appsv1.Deployment{}
	obs.failed = map[string]string{}
	in := planInput{key: origin, total: 1, cfg: cfg, copies: map[string]observedCopy{}, capacity: map[string]int64{},
		rejected: map[string]bool{}}
	if d.Spec.Replicas != nil {
		in.total = *d.Spec.Replicas
	}
	soonest := func(due time.Duration) {
		if due > 0 && (obs.due == 0 || due < obs.due) {
			obs.due = due
		}
	}
	for _, m := range obs.members {
		in.ready = append(in.ready, clusterInfo{Name: m.Name, Region: m.Region, Labels: m.Labels})
		var cur appsv1.Deployment
		switch err := m.Client.Get(ctx, client.ObjectKeyFromObject(d), &cur); {
		case apierrors.IsNotFound(err):
			in.copies[m.Name] = observedCopy{state: copies.Absent}
			continue
		case err != nil:
			obs.failed[m.Name] = fmt.Sprintf("reading the copy in cluster %s: %v", m.Name, err)
			in.copies[m.Name] = observedCopy{state: copies.Conflict} // neither planned nor touched
			continue
		}
		obs.existing[m.Name] = &cur
		oc := observedCopy{state: copies.Classify(&cur, origin, r.federation)}
		if cur.Spec.Replicas != nil {
			oc.replicas = *cur.Spec.Replicas
		}
		in.copies[m.Name] = oc
		if oc.state != copies.Ours && oc.state != copies.Adopted {
			continue
		}
		pods, err := observePods(ctx, m, &cur)
		if err != nil {
			obs.failed[m.Name] = err.Error()
			continue
		}
		n, limited, due := capacityOf(pods, threshold(cfg, r.threshold), r.clock.Now())
		if limited {
			in.capacity[m.Name] = n
		}
		soonest(due)
	}
	held, due, err := r.held(ctx, d, cfg, obs.members)
	if err != nil {
		obs.failed[""] = err.Error()
	}
	soonest(due)
	in.held = held
	obs.in = in
	return obs
}

// held lists the Clusters and returns heldMembers of them.
func (r observer) held(ctx context.Context, d *appsv1.Deployment, cfg deploymentconfig.Config, ready []registry.Member) (map[string]int32, time.Duration, error) {
	table, _, _ := clusterreplicas.Read(d.Annotations)
	if len(table) == 0 {
		return nil, 0, nil
	}
	var all kfedv1alpha1.ClusterList
	if err := r.fed.List(ctx, &all); err != nil {
		return nil, 0, fmt.Errorf("listing Clusters: %w", err)
	}
	names := map[string]bool{}
	for _, m := range ready {
		names[m.Name] = true
	}
	held, due := heldMembers(table, all.Items, names, cfg, cmp.Or(r.grace, DefaultGracePeriod), r.clock.Now())
	return held, due, nil
}

// controlPlaneReplicaSet names a ReplicaSet the control plane made for d,
// "" when there is none (or they cannot be listed).
func (r observer) controlPlaneReplicaSet(ctx context.Context, d *appsv1.Deployment) string {
	var list appsv1.ReplicaSetList
	if err := r.fed.List(ctx, &list, client.InNamespace(d.Namespace)); err != nil {
		return ""
	}
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
			return rs.Name
		}
	}
	return ""
}

// observePods reads the pods of copy cur in member m.
func observePods(ctx context.Context, m registry.Member, cur *appsv1.Deployment) ([]podView, error) {
	if !m.Watches(&corev1.Pod{}) || !m.Watches(&appsv1.ReplicaSet{}) || cur.Spec.Selector == nil {
		return nil, nil // capacity is not learned in this member
	}
	sel, err := metav1.LabelSelectorAsSelector(cur.Spec.Selector)
	if err != nil {
		return nil, nil // the member's API server would not have taken it
	}
	var rss appsv1.ReplicaSetList
	if err := m.Client.List(ctx, &rss, client.InNamespace(cur.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing ReplicaSets in cluster %s: %w", m.Name, err)
	}
	newest, rev := "", int64(-1)
	for i := range rss.Items {
		rs := &rss.Items[i]
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != cur.UID {
			continue
		}
		r, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
		if r > rev {
			newest, rev = rs.Name, r
		}
	}
	var pods corev1.PodList
	if err := m.Client.List(ctx, &pods, client.InNamespace(cur.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods in cluster %s: %w", m.Name, err)
	}
	out := make([]podView, 0, len(pods.Items))
	for i := range pods.Items {
		p := &pods.Items[i]
		ref := metav1.GetControllerOf(p)
		v := podView{
			terminating: p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
			scheduled:   p.Spec.NodeName != "",
			newest:      ref != nil && ref.Kind == "ReplicaSet" && ref.Name == newest,
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				v.unschedulableSince = cond.LastTransitionTime.Time
			}
		}
		out = append(out, v)
	}
	return out, nil
}
