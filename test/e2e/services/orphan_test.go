package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
