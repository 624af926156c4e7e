package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	"github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func TestControlPlaneCacheDropsManagedFieldsAndKeepsWhatKfedReads(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:ports":{}}}`)}},
		{Manager: "kfed-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
	}
	meta := func(managed []metav1.ManagedFieldsEntry) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Namespace: "shop", Name: "web", ResourceVersion: "7", Generation: 2, UID: "u",
			Labels:          map[string]string{"kfed.io/federation": "fed"},
			Annotations:     map[string]string{"kfed.io/weights": "cluster-1=2", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
			Finalizers:      []string{"kfed.io/service"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "u"}},
			ManagedFields:   managed,
		}
	}
	tests := []struct {
		name string
		obj  func(managed []metav1.ManagedFieldsEntry) client.Object
	}{
		{"federated Service keeps labels, annotations, finalizers, spec and status", func(m []metav1.ManagedFieldsEntry) client.Object {
			return &corev1.Service{ObjectMeta: meta(m),
				Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new("kfed.io/global")},
				Status: corev1.ServiceStatus{Conditions: []metav1.Condition{{Type: "Published", Status: metav1.ConditionTrue}}},
			}
		}},
		{"DNSEndpoint keeps its endpoints, cluster table and publishers", func(m []metav1.ManagedFieldsEntry) client.Object {
			ep := &v1alpha1.DNSEndpoint{ObjectMeta: meta(m),
				Spec: v1alpha1.DNSEndpointSpec{Endpoints: []v1alpha1.Endpoint{{
					DNSName: "web.shop.fed.svc.example.", RecordType: "A", Targets: []string{"127.0.0.10"},
				}}},
				Status: v1alpha1.DNSEndpointStatus{ObservedGeneration: 2, Publishers: []v1alpha1.PublisherStatus{{Provider: "rfc2136", ObservedGeneration: 2}}},
			}
			ep.Annotations[dnsendpoint.AnnotationClusters] = `[{"name":"cluster-1"}]`
			return ep
		}},
	}
	transform := cacheOptions("kfed-system").DefaultTransform
	if transform == nil {
		t.Fatal("the control plane cache keeps every field of every object (no transform)")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := transform(tc.obj(managed))
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.obj(nil); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("cached\n%+v\nwant\n%+v", got, want)
			}
			if m := got.(client.Object).GetManagedFields(); m != nil {
				t.Errorf("cached object keeps managedFields %v", m)
			}
		})
	}
}
