package deployments

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// Reasons of the conditions and Events.
const (
	ReasonSynced             = "Synced"
	ReasonInvalidPreferences = "InvalidPreferences"
	ReasonMemberConflict     = "MemberConflict"
	ReasonMemberWriteFailed  = "MemberWriteFailed"
	ReasonNoClusters         = "NoClusters"
	ReasonDeploymentCtrl     = "DeploymentControllerInControlPlane"
	ReasonPlanned            = "Planned"
	ReasonCapacityLimited    = "CapacityLimited"
	ReasonCapacityRestored   = "CapacityRestored"
)

// outcome is what one reconcile found and did, for the status.
type outcome struct {
	// invalid is the problem with the annotations; nothing was planned.
	invalid error
	plan    decision
	// copies are the copies in the planned clusters after the writes.
	copies map[string]*appsv1.Deployment
	// failed holds, per cluster, a write that failed.
	failed map[string]string
	// hash is the spec hash the copies should carry.
	hash string
	// held are the unreachable members keeping their replicas.
	held map[string]int32
	// capacity holds the clusters found full and what they can run.
	capacity map[string]int64
	// due is when the next unschedulable pod crosses the threshold, 0 if
	// none will.
	due time.Duration
	// controlPlaneWorkloads names a ReplicaSet of the Deployment found in
	// the control plane, "" if none.
	controlPlaneWorkloads string
}

// sumCopies sums the status of the planned clusters' copies, and makes the
// per-cluster table from the plan and the copies; old is the table last
// written, whose rows stand for the clusters that cannot be reached. The
// sum's observedGeneration is d's only when every copy carries its spec,
// else the one last reported (was).
func sumCopies(d *appsv1.Deployment, o outcome, old map[string]clusterreplicas.Cluster, was int64) (appsv1.DeploymentStatus, map[string]clusterreplicas.Cluster) {
	table := map[string]clusterreplicas.Cluster{}
	sum := appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
	for _, name := range slices.Sorted(maps.Keys(o.plan.replicas)) {
		if _, ok := o.held[name]; ok {
			// Unreachable: what was last seen there stands.
			row := old[name]
			sum.Replicas += row.Ready
			sum.UpdatedReplicas += row.Ready
			sum.ReadyReplicas += row.Ready
			sum.AvailableReplicas += row.Ready
			table[name] = row
			continue
		}
		row := clusterreplicas.Cluster{Planned: o.plan.replicas[name], Waiting: o.plan.waiting[name]}
		if n, ok := o.capacity[name]; ok {
			row.Capacity = new(int32(n))
		}
		c := o.copies[name]
		if c == nil || !current(c, o.hash) {
			sum.ObservedGeneration = was
		}
		if c != nil {
			sum.Replicas += c.Status.Replicas
			sum.UpdatedReplicas += c.Status.UpdatedReplicas
			sum.ReadyReplicas += c.Status.ReadyReplicas
			sum.AvailableReplicas += c.Status.AvailableReplicas
			sum.UnavailableReplicas += c.Status.UnavailableReplicas
			row.Ready = c.Status.ReadyReplicas
			row.Reported = current(c, o.hash) && c.Status.Replicas >= row.Planned
		}
		table[name] = row
	}
	return sum, table
}

// notice is an Event to record.
type notice struct {
	Type, Reason, Message string
}

// nextStatus returns d's next status and per-cluster table, and the Events
// the change calls for. With invalid input the counts and the table stay as
// they were: the copies kept their replicas.
func nextStatus(d *appsv1.Deployment, o outcome, now time.Time) (appsv1.DeploymentStatus, map[string]clusterreplicas.Cluster, []notice) {
	st := *d.Status.DeepCopy()
	var notices []notice
	table, _, _ := clusterreplicas.Read(d.Annotations)

	synced := appsv1.DeploymentCondition{Type: kfedv1alpha1.DeploymentSynced, Status: corev1.ConditionTrue, Reason: ReasonSynced}
	switch {
	case o.invalid != nil:
		synced.Status, synced.Reason = corev1.ConditionFalse, ReasonInvalidPreferences
		synced.Message = o.invalid.Error() + "; member copies keep their replicas"
	default:
		var sum appsv1.DeploymentStatus
		sum, table = sumCopies(d, o, table, st.ObservedGeneration)
		st.ObservedGeneration = sum.ObservedGeneration
		st.Replicas, st.UpdatedReplicas = sum.Replicas, sum.UpdatedReplicas
		st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas = sum.ReadyReplicas, sum.AvailableReplicas, sum.UnavailableReplicas
		switch {
		case len(o.failed) > 0:
			synced.Status, synced.Reason = corev1.ConditionFalse, ReasonMemberWriteFailed
			synced.Message = joinProblems(o.failed)
		case len(o.plan.conflicts) > 0:
			synced.Status, synced.Reason = corev1.ConditionFalse, ReasonMemberConflict
			synced.Message = fmt.Sprintf("cluster %s already has a Deployment %s/%s that kfed did not create; left alone, "+
				"its share planned elsewhere (annotate the federated Deployment %s: \"true\" to take it over)",
				strings.Join(o.plan.conflicts, ", "), d.Namespace, d.Name, kfedv1alpha1.AnnotationAdoptExisting)
		case len(o.plan.replicas) == 0:
			synced.Status, synced.Reason = corev1.ConditionFalse, ReasonNoClusters
			synced.Message = "no Ready member cluster is placed to run it"
		default:
			synced.Message = "planned " + describePlan(table)
		}
		if !samePlan(table, d.Annotations) && len(o.plan.replicas) > 0 {
			notices = append(notices, notice{corev1.EventTypeNormal, ReasonPlanned, "replicas per cluster: " + describePlan(table)})
		}
		notices = append(notices, capacityNotices(table, d.Annotations)...)
	}
	if was := findCondition(st.Conditions, kfedv1alpha1.DeploymentSynced); was == nil || was.Status != synced.Status ||
		was.Reason != synced.Reason || (synced.Status == corev1.ConditionFalse && was.Message != synced.Message) {
		if synced.Status == corev1.ConditionFalse {
			notices = append(notices, notice{corev1.EventTypeWarning, synced.Reason, synced.Message})
		}
	}
	st.Conditions = setCondition(st.Conditions, synced, now)
	if o.controlPlaneWorkloads != "" {
		cond := appsv1.DeploymentCondition{Type: kfedv1alpha1.DeploymentControlPlaneWorkloads, Status: corev1.ConditionTrue, Reason: ReasonDeploymentCtrl,
			Message: fmt.Sprintf("the control plane made ReplicaSet %s for this Deployment: it runs a Deployment controller, "+
				"which a federation control plane must not (its pods and status fight kfed's)", o.controlPlaneWorkloads)}
		if findCondition(st.Conditions, kfedv1alpha1.DeploymentControlPlaneWorkloads) == nil {
			notices = append(notices, notice{corev1.EventTypeWarning, cond.Reason, cond.Message})
		}
		st.Conditions = setCondition(st.Conditions, cond, now)
	} else {
		st.Conditions = slices.DeleteFunc(st.Conditions, func(c appsv1.DeploymentCondition) bool { return c.Type == kfedv1alpha1.DeploymentControlPlaneWorkloads })
	}
	return st, table, notices
}

// describePlan says "cluster-1 16 (16 ready), cluster-2 8 (6 ready, full
// at 6, 2 waiting)".
func describePlan(table map[string]clusterreplicas.Cluster) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(table)) {
		row := table[name]
		part := fmt.Sprintf("%s %d (%d ready", name, row.Planned, row.Ready)
		if row.Capacity != nil {
			part += fmt.Sprintf(", full at %d, %d waiting", *row.Capacity, row.Waiting)
		}
		parts = append(parts, part+")")
	}
	return strings.Join(parts, ", ")
}

// capacityNotices tells of clusters that turned full, or have room again,
// since the table in annotations.
func capacityNotices(table map[string]clusterreplicas.Cluster, annotations map[string]string) []notice {
	old, _, _ := clusterreplicas.Read(annotations)
	var out []notice
	for _, name := range slices.Sorted(maps.Keys(table)) {
		was, now := old[name].Capacity, table[name].Capacity
		switch {
		case now != nil && (was == nil || *was != *now):
			out = append(out, notice{corev1.EventTypeWarning, ReasonCapacityLimited,
				fmt.Sprintf("cluster %s can run only %d replicas: its pods stay unschedulable; the rest are planned elsewhere, %d kept waiting there",
					name, *now, table[name].Waiting)})
		case now == nil && was != nil:
			out = append(out, notice{corev1.EventTypeNormal, ReasonCapacityRestored,
				fmt.Sprintf("cluster %s has room again: no pod waits to be scheduled there", name)})
		}
	}
	return out
}

// samePlan reports whether table plans what the annotations' table did.
func samePlan(table map[string]clusterreplicas.Cluster, annotations map[string]string) bool {
	old, _, err := clusterreplicas.Read(annotations)
	if err != nil || len(old) != len(table) {
		return false
	}
	for name, row := range table {
		if o, ok := old[name]; !ok || o.Planned != row.Planned {
			return false
		}
	}
	return true
}

func joinProblems(m map[string]string) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, m[name])
	}
	return strings.Join(parts, "; ")
}

func findCondition(conds []appsv1.DeploymentCondition, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// setCondition sets c in conds, keeping its transition time when its
// status did not change and its update time when nothing did.
func setCondition(conds []appsv1.DeploymentCondition, c appsv1.DeploymentCondition, now time.Time) []appsv1.DeploymentCondition {
	t := metav1.NewTime(now.Truncate(time.Second))
	c.LastUpdateTime, c.LastTransitionTime = t, t
	if was := findCondition(conds, c.Type); was != nil {
		if was.Status == c.Status {
			c.LastTransitionTime = was.LastTransitionTime
			if was.Reason == c.Reason && was.Message == c.Message {
				c.LastUpdateTime = was.LastUpdateTime
			}
		}
		*was = c
		return conds
	}
	return append(conds, c)
}

// writeStatus records o in d's status and per-cluster table through fed,
// as of now, and sends the Events nextStatus asks for through recorder. It
// writes nothing that is unchanged.
func writeStatus(ctx context.Context, fed client.Client, recorder events.EventRecorder, d *appsv1.Deployment, o outcome, now time.Time) error {
	st, table, notices := nextStatus(d, o, now)
	for _, n := range notices {
		event(recorder, d, n.Type, n.Reason, "%s", n.Message)
	}
	if table != nil {
		if enc := clusterreplicas.Encode(table); d.Annotations[clusterreplicas.Annotation] != enc {
			patch := client.MergeFrom(d.DeepCopy())
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[clusterreplicas.Annotation] = enc
			if err := fed.Patch(ctx, d, patch); err != nil {
				return fmt.Errorf("writing the per-cluster table of Deployment %s/%s: %w", d.Namespace, d.Name, err)
			}
		}
	}
	if equality.Semantic.DeepEqual(st, d.Status) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Status = st
	if err := fed.Status().Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("writing status of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// event records an Event on d through recorder, none when it is nil.
func event(recorder events.EventRecorder, d *appsv1.Deployment, typ, reason, format string, args ...any) {
	if recorder != nil {
		recorder.Eventf(d, nil, typ, reason, "Reconcile", format, args...)
	}
}
