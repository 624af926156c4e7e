package publish

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// Drain is how an object's rows stand with the drained clusters among them
// (dnsendpoint.Cluster.Drained, from the Cluster's spec.drained).
type Drain struct {
	// Live are the rows that may answer the object's names.
	Live []dnsendpoint.Cluster
	// Out are the drained clusters left out of every name; Kept those
	// kept because no other cluster could answer.
	Out, Kept []string
}

// Drained is the rule of drain, which every reader of the rows applies
// (records, failover, status): a drained cluster's addresses leave every
// name of the object, its own too, while some cluster that is not drained
// and not found down can answer; otherwise the drained clusters stay, so
// that a drain never takes a name off the air, and the caller says so.
// Rows keep their order.
func Drained(rows []dnsendpoint.Cluster) Drain {
	var d Drain
	up := false
	for _, r := range rows {
		up = up || (!r.Drained && !r.Unhealthy)
	}
	for _, r := range rows {
		switch {
		case !r.Drained:
			d.Live = append(d.Live, r)
		case up:
			d.Out = append(d.Out, r.Name)
		default:
			d.Live = append(d.Live, r)
			d.Kept = append(d.Kept, r.Name)
		}
	}
	return d
}

// Reasons of kfedv1alpha1.ConditionDrained.
const (
	ReasonDrainedOut          = "DrainedClustersOut"
	ReasonOnlyDrainedClusters = "OnlyDrainedClusters"
)

// Condition is kfedv1alpha1.ConditionDrained for an object of generation gen, nil when none
// of its clusters is drained.
func (d Drain) Condition(gen int64) *metav1.Condition {
	if len(d.Out) == 0 && len(d.Kept) == 0 {
		return nil
	}
	c := &metav1.Condition{Type: kfedv1alpha1.ConditionDrained, Status: metav1.ConditionTrue, Reason: ReasonDrainedOut, ObservedGeneration: gen,
		Message: "drained clusters out of every name: " + strings.Join(d.Out, ", ")}
	if len(d.Kept) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonOnlyDrainedClusters
		c.Message = "no cluster but drained ones can answer, so the names keep " + strings.Join(d.Kept, ", ")
		if len(d.Out) > 0 {
			c.Message += "; out of every name: " + strings.Join(d.Out, ", ")
		}
	}
	return c
}

// SetCondition sets d's kfedv1alpha1.ConditionDrained on conds, or removes it when none of
// the object's clusters is drained.
func (d Drain) SetCondition(conds *[]metav1.Condition, gen int64) {
	if c := d.Condition(gen); c != nil {
		meta.SetStatusCondition(conds, *c)
		return
	}
	meta.RemoveStatusCondition(conds, kfedv1alpha1.ConditionDrained)
}
