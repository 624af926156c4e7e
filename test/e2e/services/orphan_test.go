package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"

	"github.com/kfed-io/kfed/test/framework"
)

// shardOfAServiceDeletedWhileItsMemberWasOfflineGoesWhenTheMemberReturns
// deletes a federated Service while one member's API server is down: the
// Service goes (its finalizer reaches the Ready members only), and the shard
// left in the offline member is deleted once the member is back, not kept
// for ever. Found by the fault suite (test/reliability).
func shardOfAServiceDeletedWhileItsMemberWasOfflineGoesWhenTheMemberReturns(t *testing.T, f *framework.Federation) {
	fed := f.Client("federation")
	for _, m := range f.Members {
		fedtest.WantCondition(t, fed, m.Name, "Ready", "True", 20*time.Second)
	}
	ctx := context.Background()
	svc := fedtest.FederatedService("default", "gone")
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	member := f.Client("cluster-2")
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		return member.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
	})

	if err := f.StopAPIServer("cluster-2"); err != nil {
		t.Fatal(err)
	}
	fedtest.WantCondition(t, fed, "cluster-2", "Ready", "False", 30*time.Second)
	if err := fed.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the Service is still there: %v", err)
	})

	if err := f.RestartAPIServer(ctx, "cluster-2"); err != nil {
		t.Fatal(err)
	}
	fedtest.WantCondition(t, fed, "cluster-2", "Ready", "True", 30*time.Second)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		err := member.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cluster-2 still has the shard of the deleted Service: %v", err)
	})
}

// dnsEndpointLeftByAServiceThatIsGoneIsDeleted: a DNSEndpoint of kfed's
// whose Service is gone, as a reconcile's write that timed out while the
// control plane was frozen and landed after the Service was finalized
// leaves one (the fault suite, test/reliability, found it), is deleted;
// one that is another federation's, or not kfed's, is left alone.
func dnsEndpointLeftByAServiceThatIsGoneIsDeleted(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	fed := f.Client("federation")
	ownedBy := func(name string) []metav1.OwnerReference { // a Service that was
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name,
			UID: types.UID("6e1c1a5e-0000-4000-8000-000000000001"), Controller: ptr.To(true)}}
	}
	tests := []struct {
		name     string
		labels   map[string]string
		wantGone bool
	}{
		{"late", dnsendpoint.Selector("fed"), true},
		{"late-other-federation", dnsendpoint.Selector("other"), false},
		{"late-not-kfeds", map[string]string{"app": "mine"}, false},
	}
	for _, tt := range tests {
		ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: tt.name,
			Labels: tt.labels, OwnerReferences: ownedBy(tt.name)},
			Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{{
				DNSName: tt.name + ".default.fed.svc.example.com", RecordType: "A", Targets: []string{"127.0.0.9"}}}}}
		if err := fed.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fed.Delete(context.Background(), ep) })
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		for _, tt := range tests {
			err := fed.Get(ctx, client.ObjectKey{Namespace: "default", Name: tt.name}, &extdnsv1alpha1.DNSEndpoint{})
			switch gone := apierrors.IsNotFound(err); {
			case err != nil && !gone:
				return err
			case tt.wantGone && !gone:
				return fmt.Errorf("DNSEndpoint %s of a Service that is gone is still there", tt.name)
			case !tt.wantGone && gone:
				return fmt.Errorf("DNSEndpoint %s, not kfed's to delete, was deleted", tt.name)
			}
		}
		return nil
	})
	// The ones left alone were reconciled with the one deleted; a moment
	// more shows they stay.
	time.Sleep(2 * time.Second)
	for _, tt := range tests {
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "default", Name: tt.name}, &extdnsv1alpha1.DNSEndpoint{}); !tt.wantGone && err != nil {
			t.Errorf("DNSEndpoint %s, not kfed's to delete: %v", tt.name, err)
		}
	}
}
