package mcs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// report sets each export's conditions: Valid and Conflict as d says,
// Ready as writing the import went. It writes an export's status only when
// a condition changed.
func (c *Controller) report(ctx context.Context, members []*member, d Decision, o *outcome) error {
	ready := o.ready()
	var errs []error
	for _, m := range members {
		se := m.export.Export
		if se == nil {
			continue
		}
		want := append(slices.Clone(d.Conditions[m.id]), ready)
		have := se.DeepCopy()
		changed := setConditions(&have.Status.Conditions, want, se.Generation)
		if !slices.ContainsFunc(d.Conditions[m.id], func(c metav1.Condition) bool {
			return c.Type == string(mcsv1beta1.ServiceExportConditionConflict)
		}) && meta.RemoveStatusCondition(&have.Status.Conditions, string(mcsv1beta1.ServiceExportConditionConflict)) {
			changed = true // an invalid export conflicts with none
		}
		if !changed {
			continue
		}
		if err := m.Client.Status().Patch(ctx, have, client.MergeFrom(se)); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s, status of ServiceExport %s/%s: %w", m.Name, se.Namespace, se.Name, err))
		}
	}
	return errors.Join(errs...)
}

// ready is the Ready condition of every export of the name.
func (o *outcome) ready() metav1.Condition {
	c := metav1.Condition{Type: string(mcsv1beta1.ServiceExportConditionReady)}
	switch {
	case o.unexposed:
		c.Status, c.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonFailed)
		c.Message = "no export of the name is valid: nothing is imported"
	case len(o.failed) > 0:
		var ids []string
		for id := range o.failed {
			ids = append(ids, id)
		}
		c.Status, c.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonPending)
		c.Message = "importing in clusters " + clusterList(ids) + " failed; kfed retries"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, string(mcsv1beta1.ServiceExportReasonExported)
		var what []string
		what = append(what, "imported in clusters "+clusterList(o.imported))
		if len(o.noNS) > 0 {
			what = append(what, "not in clusters "+clusterList(o.noNS)+", which have no namespace of its name")
		}
		if len(o.foreign) > 0 {
			what = append(what, "not in clusters "+clusterList(o.foreign)+", where an object kfed did not make holds its name")
		}
		c.Message = strings.Join(what, "; ")
	}
	return c
}
