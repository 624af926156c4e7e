package services

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

// decideCopies says per Ready member what its shard should be; gave what
// a written shard gives the records.
func TestDecideCopies(t *testing.T) {
	svc := testService()
	differs := testService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "other"} })
	withIngress := testService(func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "127.1.0.1"}}
	})
	tests := []struct {
		name   string
		read   memberRead
		placed bool
		// want: "write", "write adopted", "adopt", "none"; outcome what
		// the member gives once written.
		want    string
		outcome publish.Outcome
		problem string
	}{
		{"no shard yet: create it, no ingress yet", memberRead{standing: copies.Absent}, true, "write", publish.Waiting, ""},
		{"kfed's shard with an address serves", memberRead{cur: withIngress, standing: copies.Ours, row: east1}, true, "write", publish.Serving, ""},
		{"an adopted shard stays adopted", memberRead{cur: withIngress, standing: copies.Adopted, row: east1}, true, "write adopted", publish.Serving, ""},
		{"a matching Service kfed did not make is adopted", memberRead{cur: svc, standing: copies.Foreign}, true, "adopt", publish.Waiting, ""},
		{"a differing Service kfed did not make is left alone", memberRead{cur: differs, standing: copies.Foreign}, true, "none", publish.LeftAlone, "ShardConflict"},
		{"another federation's Service is left alone", memberRead{cur: svc, standing: copies.Conflict}, true, "none", publish.LeftAlone, "ShardConflict"},
		{"a hostname that did not resolve keeps the rest", memberRead{cur: withIngress, standing: copies.Ours, row: east1, unresolved: errors.New("no such host")}, true, "write", publish.Unresolved, "IngressUnresolved"},
		{"a member no longer placed gets no shard", memberRead{cur: svc, standing: copies.Ours}, false, "none", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.read.member = registry.Member{Name: "c1"}
			tt.read.matches = tt.read.cur != nil && matches(tt.read.cur, svc) // as observe reads it
			o := observation{key: types.NamespacedName{Namespace: "ns", Name: "web"}, placed: map[string]bool{"c1": tt.placed}, copies: []memberRead{tt.read}}
			a := decideCopies(svc, "fed", o)[0]
			got := "none"
			switch {
			case a.adopt:
				got = "adopt"
			case a.want != nil && a.want.Annotations[kfedv1alpha1.AnnotationAdopted] == "true":
				got = "write adopted"
			case a.want != nil:
				got = "write"
			}
			if got != tt.want || a.placed != tt.placed {
				t.Fatalf("action %s (placed %v), want %s", got, a.placed, tt.want)
			}
			if a.want != nil && a.want.Annotations[kfedv1alpha1.AnnotationOrigin] != "ns/web" {
				t.Errorf("the shard to write is not marked as web's: %v", a.want.Annotations)
			}
			if !tt.placed {
				return
			}
			g := gave([]copyWrite{{action: a}})["c1"]
			problem := ""
			if g.problem != nil {
				problem = g.problem.reason
			}
			if g.outcome != tt.outcome || problem != tt.problem {
				t.Errorf("gave %v problem %q, want %v %q", g.outcome, problem, tt.outcome, tt.problem)
			}
		})
	}
}
