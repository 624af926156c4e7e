package services

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
)

// A Service deleted just after its DNSEndpoint was written, before the
// cache has seen the DNSEndpoint: finalizing must still delete it, and a
// user's DNSEndpoint of the same name stays. Read from the cache alone, the
// finalizer went and the DNSEndpoint stayed until the garbage collector
// found it (TestFaults, control plane restarts).
func TestFinalizeDeletesADNSEndpointTheCacheHasNotSeen(t *testing.T) {
	tests := []struct {
		name        string
		managedBy   string
		wantDeleted bool
	}{
		{"kfed's DNSEndpoint is deleted", kfedv1alpha1.ManagedBy, true},
		{"a DNSEndpoint of the same name kfed did not write stays", "someone-else", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, extdnsv1alpha1.AddToScheme, kfedv1alpha1.AddToScheme} {
				if err := add(scheme); err != nil {
					t.Fatal(err)
				}
			}
			now := metav1.Now()
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
				Namespace: "shop", Name: "web", UID: "u1", Finalizers: []string{kfedv1alpha1.FinalizerService}, DeletionTimestamp: &now,
			}}
			ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{
				Namespace: "shop", Name: "web",
				Labels: map[string]string{kfedv1alpha1.LabelManagedBy: tt.managedBy, kfedv1alpha1.LabelFederation: "dev"},
			}}
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(svc, ep).Build()
			// The cache: everything the API server has but the DNSEndpoint.
			lagging := interceptor.NewClient(api.(client.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*extdnsv1alpha1.DNSEndpoint); ok && key.Name == "web" {
						return apierrors.NewNotFound(extdnsv1alpha1.GroupVersion.WithResource("dnsendpoints").GroupResource(), key.Name)
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			c := &Controller{Fed: lagging, Live: api, Members: &registry.Registry{}, Federation: "dev", Domain: "kfed.test"}
			var cur corev1.Service
			if err := api.Get(context.Background(), client.ObjectKeyFromObject(svc), &cur); err != nil {
				t.Fatal(err)
			}
			if err := c.finalize(context.Background(), &cur); err != nil {
				t.Fatal(err)
			}
			err := api.Get(context.Background(), client.ObjectKeyFromObject(ep), &extdnsv1alpha1.DNSEndpoint{})
			if deleted := apierrors.IsNotFound(err); deleted != tt.wantDeleted {
				t.Errorf("DNSEndpoint deleted: %v, want %v (err %v)", deleted, tt.wantDeleted, err)
			}
		})
	}
}
