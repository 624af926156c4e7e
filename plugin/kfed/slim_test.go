package kfed

import (
	"reflect"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func TestSlimmerKeepsWhatThePluginReadsAndDropsTheRest(t *testing.T) {
	full := func() *extdnsv1alpha1.DNSEndpoint {
		return &extdnsv1alpha1.DNSEndpoint{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "default", Name: "demo", UID: "u-1", ResourceVersion: "42", Generation: 3,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "kfed", "kfed.io/federation": "dev"},
				Annotations: map[string]string{
					"kfed.io/clusters": `{"cluster-1":{"weight":1}}`,
					"kfed.io/origin":   "default/demo",
					"kubectl.kubernetes.io/last-applied-configuration": "{...the whole object...}",
				},
				OwnerReferences: []metav1.OwnerReference{{Name: "demo", Kind: "Service", APIVersion: "v1", UID: "s-1"}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kfed"}},
				Finalizers:      []string{"kfed.io/x"},
			},
			Spec:   extdnsv1alpha1.DNSEndpointSpec{Endpoints: demoEndpoints()},
			Status: extdnsv1alpha1.DNSEndpointStatus{ObservedGeneration: 3},
		}
	}
	obj, err := newSlimmer().transform(full())
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*extdnsv1alpha1.DNSEndpoint)
	want := full()
	tests := []struct {
		name string
		ok   bool
	}{
		{"namespace, name, UID and resourceVersion are kept", got.Namespace == "default" && got.Name == "demo" && got.UID == "u-1" && got.ResourceVersion == "42"},
		{"labels are kept", reflect.DeepEqual(got.Labels, want.Labels)},
		{"every kfed.io/ annotation is kept", got.Annotations["kfed.io/clusters"] == want.Annotations["kfed.io/clusters"] && got.Annotations["kfed.io/origin"] == "default/demo"},
		{"other annotations are dropped", len(got.Annotations) == 2},
		{"the spec is kept whole", reflect.DeepEqual(got.Spec, want.Spec)},
		{"status, owners, managed fields and finalizers are dropped",
			got.Status.ObservedGeneration == 0 && got.OwnerReferences == nil && got.ManagedFields == nil && got.Finalizers == nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("got %+v", got)
			}
		})
	}
	t.Run("repeated strings share one copy", func(t *testing.T) {
		eps := got.Spec.Endpoints
		a, b := eps[0].ProviderSpecific[0].Name, eps[1].ProviderSpecific[0].Name
		if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("property names %q and %q are separate copies", a, b)
		}
	})
}
