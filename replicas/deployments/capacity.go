package deployments

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/replicas/deployments/deploymentconfig"
)

// DefaultUnschedulableThreshold is how long a pod may stay unschedulable
// before its cluster counts as full.
const DefaultUnschedulableThreshold = 60 * time.Second

// MaxWaiting is how many replicas a cluster without room keeps waiting
// beyond what it runs, so that kfed sees at once when room returns: they
// are scheduled, and the cluster's capacity is no longer limited.
const MaxWaiting = 2

// podView is what capacity needs to know of one pod of a copy.
type podView struct {
	terminating bool
	scheduled   bool
	// newest is true for pods of the copy's newest ReplicaSet.
	newest bool
	// unschedulableSince is when the scheduler last said the pod cannot be
	// placed (PodScheduled=False, reason Unschedulable); zero otherwise.
	unschedulableSince time.Time
}

// capacityOf tells from a copy's pods whether its cluster is full: it is
// when a pod of the newest ReplicaSet has been unschedulable for threshold
// or longer, and then it can run the pods it has scheduled. It also returns
// how long until the next unschedulable pod crosses the threshold, 0 when
// none will.
func capacityOf(pods []podView, threshold time.Duration, now time.Time) (capacity int64, limited bool, due time.Duration) {
	for _, p := range pods {
		if p.terminating {
			continue
		}
		if p.scheduled {
			capacity++
			continue
		}
		if !p.newest || p.unschedulableSince.IsZero() {
			continue
		}
		switch wait := p.unschedulableSince.Add(threshold).Sub(now); {
		case wait <= 0:
			limited = true
		case due == 0 || wait < due:
			due = wait
		}
	}
	if !limited {
		return 0, false, due
	}
	return capacity, true, due
}

// threshold is the Deployment's unschedulable threshold: its annotation's,
// else the controller's if positive, else the default.
func (c *Controller) threshold(cfg deploymentconfig.Config) time.Duration {
	controller := c.UnschedulableThreshold
	if controller <= 0 {
		controller = DefaultUnschedulableThreshold
	}
	return cmp.Or(cfg.UnschedulableThreshold, controller)
}

// observePods reads the pods of copy cur in member m.
func observePods(ctx context.Context, m clusters.Member, cur *appsv1.Deployment) ([]podView, error) {
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
