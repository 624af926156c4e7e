package report

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/tenancy"
)

func TestCondition(t *testing.T) {
	rule := tenancy.NewEndpoints("dev", []string{"kfed-system"})
	obj := func(conds []metav1.Condition, names ...string) *extdnsv1alpha1.DNSEndpoint {
		ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "intruder", Name: "x", Generation: 3}}
		for _, n := range names {
			ep.Spec.Endpoints = append(ep.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: n, RecordType: "A", Targets: []string{"198.51.100.66"}})
		}
		ep.Status.Conditions = conds
		return ep
	}
	refusedBefore := []metav1.Condition{{Type: kfedv1alpha1.ConditionNamesAdmitted, Status: metav1.ConditionFalse, Reason: ReasonNameNotOwned}}
	tests := []struct {
		name       string
		ep         *extdnsv1alpha1.DNSEndpoint
		want       bool
		status     metav1.ConditionStatus
		messageHas []string
	}{
		{"an object of the namespace's own names gets no condition", obj(nil, "x.intruder.dev.svc.kfed.test"), false, "", nil},
		{"another namespace's name makes it False, naming the name, the owner and the count",
			obj(nil, "x.intruder.dev.svc.kfed.test", "demo.default.dev.svc.kfed.test"), true, metav1.ConditionFalse,
			[]string{"1 of 2 endpoints", "A demo.default.dev.svc.kfed.test", "namespace default"}},
		{"a name that is no namespace's names the trusted namespaces",
			obj(nil, "www.kfed.test"), true, metav1.ConditionFalse, []string{"only namespaces kfed-system"}},
		{"once fixed it turns True", obj(refusedBefore, "x.intruder.dev.svc.kfed.test"), true, metav1.ConditionTrue,
			[]string{"every name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, refused := rule.Admit(tt.ep)
			got, ok := Condition(tt.ep, refused)
			if ok != tt.want {
				t.Fatalf("condition %+v (%v), want one: %v", got, ok, tt.want)
			}
			if !ok {
				return
			}
			if got.Status != tt.status || got.ObservedGeneration != 3 {
				t.Errorf("condition %+v, want status %s at generation 3", got, tt.status)
			}
			for _, s := range tt.messageHas {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q lacks %q", got.Message, s)
				}
			}
		})
	}
}

func TestEventNoteFitsAnEvent(t *testing.T) {
	var refused []tenancy.Refusal
	for range 100 {
		refused = append(refused, tenancy.Refusal{Name: "demo.default.dev.svc.kfed.test", RecordType: "A",
			Reason: "demo.default.dev.svc.kfed.test is a federated name of namespace default, published only from DNSEndpoints in default"})
	}
	note := eventNote(refused)
	if len(note) > maxNote || !strings.Contains(note, "more (see the condition") {
		t.Errorf("note of %d bytes, want at most %d ending in a pointer to the condition: %s", len(note), maxNote, note)
	}
	if one := eventNote(refused[:1]); !strings.Contains(one, "namespace default") || strings.Contains(one, "more") {
		t.Errorf("a one-endpoint note %q does not name the rule", one)
	}
}

func TestConditionLostTriggersAReport(t *testing.T) {
	with := func(conds ...metav1.Condition) *extdnsv1alpha1.DNSEndpoint {
		return &extdnsv1alpha1.DNSEndpoint{Status: extdnsv1alpha1.DNSEndpointStatus{Conditions: conds}}
	}
	admitted := metav1.Condition{Type: kfedv1alpha1.ConditionNamesAdmitted, Status: metav1.ConditionFalse, Reason: ReasonNameNotOwned}
	other := metav1.Condition{Type: "kfed.io/Other", Status: metav1.ConditionTrue, Reason: "X"}
	tests := []struct {
		name     string
		old, new *extdnsv1alpha1.DNSEndpoint
		want     bool
	}{
		{"a status written whole without the condition (ExternalDNS) is reported again", with(admitted, other), with(), true},
		{"the condition kept", with(admitted), with(admitted, other), false},
		{"never had it", with(other), with(), false},
		{"gaining it", with(), with(admitted), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := conditionLost().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("conditionLost = %v, want %v", got, tt.want)
			}
		})
	}
}
