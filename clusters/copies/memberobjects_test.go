package copies

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// TestClassify is the member-object rule over a member Service of a
// federated Service's name.
func TestClassify(t *testing.T) {
	service := func(mutate ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	mark := func(federation, origin, adopted string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Labels = map[string]string{kfedv1alpha1.LabelFederation: federation}
			s.Annotations = map[string]string{kfedv1alpha1.AnnotationOrigin: origin}
			if adopted != "" {
				s.Annotations[kfedv1alpha1.AnnotationAdopted] = adopted
			}
		}
	}
	tests := []struct {
		name     string
		existing *corev1.Service
		want     Standing
	}{
		{"no member Service: absent", nil, Absent},
		{"made by kfed for this Service in this federation: ours", service(mark("fed", "ns/web", "")), Ours},
		{"taken over by kfed: adopted", service(mark("fed", "ns/web", "true")), Adopted},
		{"another federation's: conflict", service(mark("other", "ns/web", "")), Conflict},
		{"this federation's, for another Service: conflict", service(mark("fed", "ns/other", "")), Conflict},
		{"nobody's: may be adopted if it matches", service(), Foreign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.existing, "ns/web", "fed"); got != tt.want {
				t.Errorf("Classify = %s, want %s", got, tt.want)
			}
		})
	}
}
