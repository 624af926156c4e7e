package gateways

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

// Condition reasons.
const (
	reasonValid          = "Valid"
	reasonInvalid        = "InvalidSpec"
	reasonPlaced         = "Placed"
	reasonNotPlaced      = "CopyProblem"
	reasonNoClusterReady = "NoClusterReady"
	reasonPublished      = "Published"
	reasonWaiting        = "WaitingForAddresses"
	reasonRefused        = "HostnameRefused"
	reasonNoHostname     = "NoHostname"
	reasonHealthy        = "Healthy"
	reasonUnhealthy      = "EndpointsUnhealthy"
	reasonNoneHealthy    = "NoEndpointHealthy"
)

// conditions turns a decision into kfed's conditions on the object of
// generation gen.
func conditions(d decision, placed int, gen int64) []metav1.Condition {
	cond := func(typ string, ok bool, reason, msg string) metav1.Condition {
		st := metav1.ConditionTrue
		if !ok {
			st = metav1.ConditionFalse
		}
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	out := []metav1.Condition{cond(kfedv1alpha1.ConditionValid, true, reasonValid, "annotations are valid")}
	switch {
	case len(d.problems) > 0:
		out = append(out, cond(kfedv1alpha1.ConditionPlaced, false, reasonNotPlaced, strings.Join(d.problems, "; ")))
	case placed == 0:
		out = append(out, cond(kfedv1alpha1.ConditionPlaced, false, reasonNoClusterReady, "the placement selects no joined cluster"))
	case placed == len(d.offline):
		out = append(out, cond(kfedv1alpha1.ConditionPlaced, false, reasonNoClusterReady, "no placed cluster is Ready: "+strings.Join(d.offline, ", ")))
	default:
		msg := fmt.Sprintf("copies in %d of %d placed clusters", placed-len(d.offline), placed)
		if len(d.offline) > 0 {
			msg += "; not Ready: " + strings.Join(d.offline, ", ")
		}
		out = append(out, cond(kfedv1alpha1.ConditionPlaced, true, reasonPlaced, msg))
	}
	switch {
	case len(d.refused) > 0:
		var why []string
		for _, r := range d.refused {
			why = append(why, r.Reason)
		}
		msg := "not published: " + strings.Join(why, "; ")
		if len(d.published) > 0 {
			msg += "; published: " + strings.Join(d.published, ", ")
		}
		out = append(out, cond(kfedv1alpha1.ConditionHostnamesPublished, false, reasonRefused, msg))
	case len(d.published) == 0:
		out = append(out, cond(kfedv1alpha1.ConditionHostnamesPublished, false, reasonNoHostname, "the object serves no hostname"))
	case len(d.serving) == 0:
		msg := "no copy has an address yet"
		if len(d.waiting) > 0 {
			msg += " (waiting on " + strings.Join(d.waiting, ", ") + ")"
		}
		out = append(out, cond(kfedv1alpha1.ConditionHostnamesPublished, false, reasonWaiting, msg))
	default:
		msg := fmt.Sprintf("%s published with addresses in %s", strings.Join(d.published, ", "), strings.Join(d.serving, ", "))
		if len(d.waiting) > 0 {
			msg += "; waiting for addresses in " + strings.Join(d.waiting, ", ")
		}
		out = append(out, cond(kfedv1alpha1.ConditionHostnamesPublished, true, reasonPublished, msg))
	}
	switch {
	case !d.judged || len(d.serving) == 0:
	case len(d.down) == 0:
		out = append(out, cond(kfedv1alpha1.ConditionHealthy, true, reasonHealthy, fmt.Sprintf("%d of %d clusters healthy", len(d.serving), len(d.serving))))
	case len(d.down) == len(d.serving):
		out = append(out, cond(kfedv1alpha1.ConditionHealthy, false, reasonNoneHealthy, "no cluster is healthy, so the hostnames keep all of them (fail open): "+strings.Join(d.down, "; ")))
	default:
		out = append(out, cond(kfedv1alpha1.ConditionHealthy, false, reasonUnhealthy, fmt.Sprintf("%d of %d clusters healthy; out of DNS: %s",
			len(d.serving)-len(d.down), len(d.serving), strings.Join(d.down, "; "))))
	}
	if c := d.drain.Condition(gen); c != nil {
		out = append(out, *c)
	}
	if len(d.serving) > 0 {
		out = append(out, publish.ProgrammedConditions(d.publishers, d.epGen, gen)...)
	}
	return out
}

// mergeConditions is old with conds set in it, less the Drained condition
// when conds has none (no cluster of the object is drained any more) and
// the per-provider ones of providers that no longer report.
func mergeConditions(old, conds []metav1.Condition) []metav1.Condition {
	merged := slices.Clone(old)
	for _, c := range conds {
		meta.SetStatusCondition(&merged, c)
	}
	if !slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == kfedv1alpha1.ConditionDrained }) {
		meta.RemoveStatusCondition(&merged, kfedv1alpha1.ConditionDrained) // no cluster of it is drained (any more)
	}
	for _, c := range slices.Clone(merged) {
		if strings.HasPrefix(c.Type, kfedv1alpha1.ConditionProgrammedPrefix) && !slices.ContainsFunc(conds, func(w metav1.Condition) bool { return w.Type == c.Type }) {
			meta.RemoveStatusCondition(&merged, c.Type) // a provider that no longer reports
		}
	}
	return merged
}

// patchStatus writes obj as it differs from before: its status, and its
// metadata too when its conditions live there (inMetadata).
func patchStatus(ctx context.Context, fed client.Client, before, obj client.Object, inMetadata bool) error {
	if !inMetadata {
		return fed.Status().Patch(ctx, obj, client.MergeFrom(before))
	}
	// The Ingress's addresses are status, its conditions metadata.
	status := obj.DeepCopyObject().(client.Object)
	if err := fed.Status().Patch(ctx, status, client.MergeFrom(before)); err != nil {
		return err
	}
	before.SetResourceVersion("")
	obj.SetResourceVersion("")
	return fed.Patch(ctx, obj, client.MergeFrom(before))
}
