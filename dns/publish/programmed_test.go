package publish

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestProgrammedConditions(t *testing.T) {
	tests := []struct {
		name string
		pubs []extdnsv1alpha1.PublisherStatus
		want []string // "type status reason"
	}{
		{name: "no provider reports: no condition"},
		{name: "each provider has its own condition, one's error hiding nothing of the others",
			pubs: []extdnsv1alpha1.PublisherStatus{
				{Provider: "rfc2136", ObservedGeneration: 3},
				{Provider: "route53", ObservedGeneration: 2, Error: "InvalidChangeBatch: bad record"},
				{Provider: "clouddns", ObservedGeneration: 2},
			},
			want: []string{"kfed.io/Programmed-rfc2136 True Programmed", "kfed.io/Programmed-route53 False ProviderError", "kfed.io/Programmed-clouddns Unknown Publishing"}},
		{name: "names held by another owner are a conflict even when the rest is published",
			pubs: []extdnsv1alpha1.PublisherStatus{{Provider: "route53", ObservedGeneration: 3, Conflicts: []string{"web.example.com"}}},
			want: []string{"kfed.io/Programmed-route53 False DNSConflict"}},
		{name: "an error from before the current generation was published is over",
			pubs: []extdnsv1alpha1.PublisherStatus{{Provider: "route53", ObservedGeneration: 3, Error: "throttled"}},
			want: []string{"kfed.io/Programmed-route53 True Programmed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range ProgrammedConditions(tt.pubs, 3, 7) {
				got = append(got, c.Type+" "+string(c.Status)+" "+c.Reason)
				if c.ObservedGeneration != 7 {
					t.Errorf("%s observes generation %d, want the object's 7", c.Type, c.ObservedGeneration)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSetProgrammedConditionsDropsProvidersThatNoLongerReport(t *testing.T) {
	conds := []metav1.Condition{
		{Type: "kfed.io/Published", Status: metav1.ConditionTrue},
		{Type: "kfed.io/Programmed-clouddns", Status: metav1.ConditionTrue},
		{Type: "kfed.io/Programmed-route53", Status: metav1.ConditionUnknown},
	}
	SetProgrammedConditions(&conds, []extdnsv1alpha1.PublisherStatus{{Provider: "route53", ObservedGeneration: 1}}, 1, 1)
	var got []string
	for _, c := range conds {
		got = append(got, c.Type+" "+string(c.Status))
	}
	if want := []string{"kfed.io/Published True", "kfed.io/Programmed-route53 True"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFoldProgrammedNamesEveryProviderInOneCondition(t *testing.T) {
	conds := append([]metav1.Condition{{Type: "kfed.io/Valid", Status: metav1.ConditionTrue}}, ProgrammedConditions([]extdnsv1alpha1.PublisherStatus{
		{Provider: "rfc2136", ObservedGeneration: 2}, {Provider: "route53", ObservedGeneration: 1, Error: "InvalidChangeBatch"}, {Provider: "clouddns", ObservedGeneration: 1},
	}, 2, 1)...)
	got := FoldProgrammed(conds)
	if len(got) != 2 || got[0].Type != "kfed.io/Valid" || got[1].Type != kfedv1alpha1.ConditionDNSProgrammed {
		t.Fatalf("folded into %+v", got)
	}
	f := got[1]
	if f.Status != metav1.ConditionFalse || f.Reason != ReasonProviderError {
		t.Errorf("%s %s, want False %s", f.Status, f.Reason, ReasonProviderError)
	}
	for _, p := range []string{"rfc2136 holds", "route53 has not published the current records: InvalidChangeBatch", "clouddns is publishing"} {
		if !strings.Contains(f.Message, p) {
			t.Errorf("message %q lacks %q", f.Message, p)
		}
	}
	if n := len(FoldProgrammed(conds[:1])); n != 1 {
		t.Errorf("without providers: %d conditions", n)
	}
}
