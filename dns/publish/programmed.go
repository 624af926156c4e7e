package publish

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// Reasons of the per-provider conditions.
const (
	ReasonProgrammed    = "Programmed"
	ReasonPublishing    = "Publishing"
	ReasonDNSConflict   = "DNSConflict"
	ReasonProviderError = "ProviderError"
)

// ProgrammedConditions are an object's per-provider conditions, from the
// status.publishers of its DNSEndpoint of generation gen, for the object's
// generation objGen: True when the provider holds the current records;
// False naming the names it left alone (held by records kfed does not own)
// or with its error while the current records are not published; Unknown
// while they are on their way. One provider's state never hides another's.
func ProgrammedConditions(pubs []extdnsv1alpha1.PublisherStatus, gen, objGen int64) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(pubs))
	for _, p := range pubs {
		c := metav1.Condition{Type: kfedv1alpha1.ConditionProgrammedPrefix + p.Provider, ObservedGeneration: objGen}
		switch {
		case len(p.Conflicts) > 0:
			c.Status, c.Reason = metav1.ConditionFalse, ReasonDNSConflict
			c.Message = fmt.Sprintf("%s leaves %s alone: held by records kfed does not own", p.Provider, strings.Join(p.Conflicts, ", "))
		case p.ObservedGeneration >= gen:
			c.Status, c.Reason = metav1.ConditionTrue, ReasonProgrammed
			c.Message = fmt.Sprintf("%s holds the current records", p.Provider)
		case p.Error != "":
			c.Status, c.Reason = metav1.ConditionFalse, ReasonProviderError
			c.Message = fmt.Sprintf("%s has not published the current records: %s", p.Provider, p.Error)
		default:
			c.Status, c.Reason = metav1.ConditionUnknown, ReasonPublishing
			c.Message = fmt.Sprintf("%s is publishing the current records", p.Provider)
		}
		out = append(out, c)
	}
	return out
}

// SetProgrammedConditions sets ProgrammedConditions on conds and removes
// those of providers that no longer report.
func SetProgrammedConditions(conds *[]metav1.Condition, pubs []extdnsv1alpha1.PublisherStatus, gen, objGen int64) {
	want := ProgrammedConditions(pubs, gen, objGen)
	var stale []string
	for _, c := range *conds {
		if strings.HasPrefix(c.Type, kfedv1alpha1.ConditionProgrammedPrefix) && !hasType(want, c.Type) {
			stale = append(stale, c.Type)
		}
	}
	for _, typ := range stale {
		meta.RemoveStatusCondition(conds, typ)
	}
	for _, c := range want {
		meta.SetStatusCondition(conds, c)
	}
}

func hasType(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return true
		}
	}
	return false
}

// FoldProgrammed returns conds with the per-provider conditions folded into
// one kfedv1alpha1.ConditionDNSProgrammed naming each provider's state: False when one is
// False, else Unknown when one is, else True. Without per-provider
// conditions it returns conds as they are.
func FoldProgrammed(conds []metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	var fold *metav1.Condition
	var states []string
	rank := map[metav1.ConditionStatus]int{metav1.ConditionTrue: 0, metav1.ConditionUnknown: 1, metav1.ConditionFalse: 2}
	for _, c := range conds {
		if !strings.HasPrefix(c.Type, kfedv1alpha1.ConditionProgrammedPrefix) {
			out = append(out, c)
			continue
		}
		states = append(states, c.Message)
		if fold == nil || rank[c.Status] > rank[fold.Status] {
			fold = &metav1.Condition{Type: kfedv1alpha1.ConditionDNSProgrammed, Status: c.Status, Reason: c.Reason, ObservedGeneration: c.ObservedGeneration}
		}
	}
	if fold == nil {
		return out
	}
	fold.Message = strings.Join(states, "; ")
	return append(out, *fold)
}
