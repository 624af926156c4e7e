package v1alpha1

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsFederated(t *testing.T) {
	global, other := LoadBalancerClassGlobal, "example.com/lb"
	annotated := func(k, v string) metav1.ObjectMeta { return metav1.ObjectMeta{Annotations: map[string]string{k: v}} }
	tests := []struct {
		name string
		obj  metav1.Object
		want bool
	}{
		{"a Service of class kfed.io/global", &corev1.Service{Spec: corev1.ServiceSpec{LoadBalancerClass: &global}}, true},
		{"a Service of any class with kfed.io/federated", &corev1.Service{ObjectMeta: annotated(AnnotationFederated, "true"), Spec: corev1.ServiceSpec{LoadBalancerClass: &other}}, true},
		{"a Service of another class", &corev1.Service{Spec: corev1.ServiceSpec{LoadBalancerClass: &other}}, false},
		{"a Service with kfed.io/federated other than true", &corev1.Service{ObjectMeta: annotated(AnnotationFederated, "yes")}, false},
		{"a Deployment with replica preferences", &appsv1.Deployment{ObjectMeta: annotated(AnnotationReplicaPreferences, "{}")}, true},
		{"a Deployment with kfed.io/federated", &appsv1.Deployment{ObjectMeta: annotated(AnnotationFederated, "true")}, true},
		{"a plain Deployment", &appsv1.Deployment{}, false},
		{"an Ingress with kfed.io/federated", &networkingv1.Ingress{ObjectMeta: annotated(AnnotationFederated, "true")}, true},
		{"an Ingress with replica preferences is not opted in", &networkingv1.Ingress{ObjectMeta: annotated(AnnotationReplicaPreferences, "{}")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsFederated(tt.obj); got != tt.want {
				t.Errorf("IsFederated = %v, want %v", got, tt.want)
			}
		})
	}
}
