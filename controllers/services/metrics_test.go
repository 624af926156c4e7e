package services

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestServiceMetricsCountConditionsAndFailingOpen(t *testing.T) {
	svc := func(federated bool, conds ...metav1.Condition) corev1.Service {
		s := corev1.Service{Status: corev1.ServiceStatus{Conditions: conds}}
		if federated {
			s.Annotations = map[string]string{"kfed.io/federated": "true"}
		}
		return s
	}
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason}
	}
	tests := []struct {
		name            string
		list            []corev1.Service
		want            map[[2]string]int
		wantFailingOpen int
	}{
		{"a Service not federated is not counted", []corev1.Service{svc(false, cond(kfedv1alpha1.ConditionValid, "True", reasonValid))},
			map[[2]string]int{}, 0},
		{"conditions not set yet count as Unknown, but DNSPublished only where set",
			[]corev1.Service{svc(true, cond(kfedv1alpha1.ConditionValid, "True", reasonValid))},
			map[[2]string]int{{kfedv1alpha1.ConditionValid, "True"}: 1, {kfedv1alpha1.ConditionPlaced, "Unknown"}: 1, {kfedv1alpha1.ConditionPublished, "Unknown"}: 1, {kfedv1alpha1.ConditionHealthy, "Unknown"}: 1}, 0},
		{"a DNS conflict counts DNSPublished False",
			[]corev1.Service{svc(true, cond(kfedv1alpha1.ConditionDNSPublished, "False", reasonDNSConflict)), svc(true, cond(kfedv1alpha1.ConditionDNSPublished, "True", reasonDNSPublished))},
			map[[2]string]int{{kfedv1alpha1.ConditionValid, "Unknown"}: 2, {kfedv1alpha1.ConditionPlaced, "Unknown"}: 2, {kfedv1alpha1.ConditionPublished, "Unknown"}: 2, {kfedv1alpha1.ConditionHealthy, "Unknown"}: 2,
				{kfedv1alpha1.ConditionDNSPublished, "False"}: 1, {kfedv1alpha1.ConditionDNSPublished, "True"}: 1}, 0},
		{"no endpoint healthy fails open; some unhealthy does not",
			[]corev1.Service{svc(true, cond(kfedv1alpha1.ConditionHealthy, "False", reasonNoneHealthy)), svc(true, cond(kfedv1alpha1.ConditionHealthy, "False", reasonUnhealthy))},
			map[[2]string]int{{kfedv1alpha1.ConditionValid, "Unknown"}: 2, {kfedv1alpha1.ConditionPlaced, "Unknown"}: 2, {kfedv1alpha1.ConditionPublished, "Unknown"}: 2, {kfedv1alpha1.ConditionHealthy, "False"}: 2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, failingOpen := countServices(tt.list)
			if len(got) != len(tt.want) {
				t.Errorf("counts %v, want %v", got, tt.want)
			}
			for k, n := range tt.want {
				if got[k] != n {
					t.Errorf("%s=%s: %d, want %d", k[0], k[1], got[k], n)
				}
			}
			if failingOpen != tt.wantFailingOpen {
				t.Errorf("failing open: %d, want %d", failingOpen, tt.wantFailingOpen)
			}
		})
	}
}
