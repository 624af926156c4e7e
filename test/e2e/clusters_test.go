package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/manager"
	"github.com/kfed-io/kfed/test/framework"
)

func clusterCondition(ctx context.Context, c client.Client, name, cond string) (string, error) {
	var cl kfedv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &cl); err != nil {
		return "", err
	}
	if got := meta.FindStatusCondition(cl.Status.Conditions, cond); got != nil {
		return string(got.Status), nil
	}
	return "", nil
}

func wantCondition(t testing.TB, fed client.Client, name, cond, want string, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		got, err := clusterCondition(ctx, fed, name, cond)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("cluster %s %s=%q, want %q", name, cond, got, want)
		}
		return nil
	})
}

func TestClusterGoesOfflineWhenItsAPIServerStopsAndComesBack(t *testing.T) {
	f := framework.Start(t, framework.Members(2))
	f.JoinAll()
	f.StartController(manager.Options{})
	fed := f.Client("federation")
	for _, m := range f.Members {
		wantCondition(t, fed, m.Name, kfedv1alpha1.ClusterReady, "True", 20*time.Second)
	}

	if err := f.StopAPIServer("cluster-2"); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, fed, "cluster-2", kfedv1alpha1.ClusterOffline, "True", 20*time.Second)
	if got, _ := clusterCondition(context.Background(), fed, "cluster-1", kfedv1alpha1.ClusterReady); got != "True" {
		t.Errorf("cluster-1 Ready=%q while cluster-2 was down, want True", got)
	}

	if err := f.RestartAPIServer(context.Background(), "cluster-2"); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, fed, "cluster-2", kfedv1alpha1.ClusterReady, "True", 30*time.Second)
}
