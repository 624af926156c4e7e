package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMemberCacheDropsManagedFieldsAndKeepsWhatKfedReads(t *testing.T) {
	shard := func(managed []metav1.ManagedFieldsEntry) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "shop", Name: "web", ResourceVersion: "7", Generation: 2,
				Labels:        map[string]string{"kfed.io/federation": "fed"},
				Annotations:   map[string]string{"kfed.io/origin": "shop/web"},
				Finalizers:    []string{"kfed.io/shard"},
				ManagedFields: managed,
			},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{
				Ingress: []corev1.LoadBalancerIngress{{IP: "127.0.0.10"}},
			}},
		}
	}
	transform := memberCacheOptions().DefaultTransform
	if transform == nil {
		t.Fatal("member caches keep every field of every object (no transform)")
	}
	got, err := transform(shard([]metav1.ManagedFieldsEntry{
		{Manager: "kfed-controller", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}},
		{Manager: "loopbacklb", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := shard(nil); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("cached shard\n%+v\nwant\n%+v", got, want)
	}
	if m := got.(client.Object).GetManagedFields(); m != nil {
		t.Errorf("cached shard keeps managedFields %v", m)
	}
}
