package clusters

// A member's seats in every quorum (ADR 0013): the Cluster controller says
// on the Cluster when its agents keep more checkers than the operator
// allows, which the quorum does not count.

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// checkerSeats sets cluster's TooManyCheckers condition from the
// HealthReports in its member namespace, read through r, and returns the names of those
// beyond its seats. A condition that was never set and has nothing to say
// stays absent.
func checkerSeats(ctx context.Context, r client.Reader, cluster *kfedv1alpha1.Cluster) ([]string, error) {
	var reports kfedv1alpha1.HealthReportList
	err := r.List(ctx, &reports, client.InNamespace(kfedv1alpha1.MemberNamespace(cluster.Name)))
	if meta.IsNoMatchError(err) {
		return nil, nil // no HealthReport CRD: no checkers
	}
	if err != nil {
		return nil, fmt.Errorf("reading the checkers of cluster %s: %w", cluster.Name, err)
	}
	counted, over := kfedv1alpha1.Seats(reports.Items, []kfedv1alpha1.Cluster{*cluster})
	var names []string
	for _, r := range over[cluster.Name] {
		names = append(names, r.Name)
	}
	conds := &cluster.Status.Conditions
	switch {
	case len(names) > 0:
		meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterTooManyCheckers, Status: metav1.ConditionTrue,
			Reason: kfedv1alpha1.ReasonOverCheckerLimit, ObservedGeneration: cluster.Generation,
			Message: fmt.Sprintf("%d checkers report from this cluster, %d may count (spec.healthCheck.maxCheckers); not counted: %s",
				len(counted)+len(names), cluster.MaxCheckers(), strings.Join(names, ", "))})
	case meta.FindStatusCondition(*conds, kfedv1alpha1.ClusterTooManyCheckers) != nil:
		meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterTooManyCheckers, Status: metav1.ConditionFalse,
			Reason: kfedv1alpha1.ReasonWithinCheckerLimit, ObservedGeneration: cluster.Generation,
			Message: fmt.Sprintf("every checker of this cluster counts (%d of %d)", len(counted), cluster.MaxCheckers())})
	}
	return names, nil
}

// seatsEvent warns through rec, when there is one, when a cluster goes over
// its seats, or the checkers left out change.
func seatsEvent(rec events.EventRecorder, before, after *kfedv1alpha1.Cluster, over []string) {
	now := meta.FindStatusCondition(after.Status.Conditions, kfedv1alpha1.ClusterTooManyCheckers)
	if rec == nil || now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	if was := meta.FindStatusCondition(before.Status.Conditions, kfedv1alpha1.ClusterTooManyCheckers); was != nil && was.Message == now.Message {
		return
	}
	rec.Eventf(after, nil, corev1.EventTypeWarning, kfedv1alpha1.ClusterTooManyCheckers, "CountCheckers",
		"cluster %s has more checkers than its %d seats; not counting %s", after.Name, after.MaxCheckers(), strings.Join(over, ", "))
}

// clusterOfNamespace maps an object of a member namespace to its Cluster.
func clusterOfNamespace(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		if !strings.HasPrefix(o.GetNamespace(), kfedv1alpha1.MemberNamespacePrefix) {
			return nil
		}
		var list kfedv1alpha1.ClusterList
		if err := c.List(ctx, &list); err != nil {
			return nil // each Cluster's own probes look again
		}
		for _, cl := range list.Items {
			if kfedv1alpha1.MemberNamespace(cl.Name) == o.GetNamespace() {
				return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: cl.Name}}}
			}
		}
		return nil
	}
}
