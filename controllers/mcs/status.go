package mcs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// report sets each export's conditions: Valid and Conflict as d says,
// Ready as writing the import went, and kfedv1alpha1.ConditionGlobalName (global) on the
// exports of LoadBalancer Services g publishes. It writes an export's
// status only when a condition changed, and logs to log an Event it could
// not record.
func report(ctx context.Context, log logr.Logger, members []*member, d Decision, o *outcome, g *globalState, global *metav1.Condition) error {
	var errs []error
	for _, m := range members {
		se := m.export.Export
		if se == nil {
			continue
		}
		valid := !slices.ContainsFunc(d.Conditions[m.id], func(c metav1.Condition) bool {
			return c.Type == string(mcsv1beta1.ServiceExportConditionValid) && c.Status == metav1.ConditionFalse
		})
		want := append(slices.Clone(d.Conditions[m.id]), o.ready(valid))
		have := se.DeepCopy()
		changed := setConditions(&have.Status.Conditions, want, se.Generation)
		if !slices.ContainsFunc(d.Conditions[m.id], func(c metav1.Condition) bool {
			return c.Type == string(mcsv1beta1.ServiceExportConditionConflict)
		}) && meta.RemoveStatusCondition(&have.Status.Conditions, string(mcsv1beta1.ServiceExportConditionConflict)) {
			changed = true // an invalid export conflicts with none
		}
		if g != nil && g.exporters[m.id] && global != nil {
			changed = setConditions(&have.Status.Conditions, []metav1.Condition{*global}, se.Generation) || changed
		} else if meta.RemoveStatusCondition(&have.Status.Conditions, kfedv1alpha1.ConditionGlobalName) {
			changed = true // no longer a LoadBalancer's export, or not exported
		}
		if !changed {
			continue
		}
		if err := m.Client.Status().Patch(ctx, have, client.MergeFrom(se)); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s, status of ServiceExport %s/%s: %w", m.Name, se.Namespace, se.Name, err))
			continue
		}
		for _, w := range warnings(se.Status.Conditions, have.Status.Conditions) {
			warn(ctx, log, m, have, w)
		}
	}
	return errors.Join(errs...)
}

// warnings are the conditions of now that turned bad since before: an
// export that is not valid, or that conflicts, which a user must notice.
func warnings(before, now []metav1.Condition) []metav1.Condition {
	bad := func(c metav1.Condition) bool {
		return (c.Type == string(mcsv1beta1.ServiceExportConditionValid) && c.Status == metav1.ConditionFalse) ||
			(c.Type == string(mcsv1beta1.ServiceExportConditionConflict) && c.Status == metav1.ConditionTrue) ||
			(c.Type == kfedv1alpha1.ConditionGlobalName && c.Status == metav1.ConditionFalse)
	}
	var out []metav1.Condition
	for _, c := range now {
		old := meta.FindStatusCondition(before, c.Type)
		if bad(c) && (old == nil || old.Status != c.Status || old.Reason != c.Reason) {
			out = append(out, c)
		}
	}
	return out
}

// warn records a Warning Event on an export in its member; an Event that
// cannot be written is logged, not retried: the condition says it too.
func warn(ctx context.Context, log logr.Logger, m *member, se *mcsv1beta1.ServiceExport, cond metav1.Condition) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: se.Namespace, GenerateName: se.Name + "."},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: mcsv1beta1.GroupVersion.String(), Kind: "ServiceExport",
			Namespace: se.Namespace, Name: se.Name, UID: se.UID, ResourceVersion: se.ResourceVersion,
		},
		Reason: cond.Reason, Message: cond.Message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kfed-mcs"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := m.Client.Create(ctx, ev); err != nil {
		log.Error(err, "recording an Event on a ServiceExport", "cluster", m.Name, "export", se.Namespace+"/"+se.Name)
	}
}
