package services

import (
	"context"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/framework"
)

func clusterGoesOfflineWhenItsAPIServerStopsAndComesBack(t *testing.T, f *framework.Federation) {
	fed := f.Client("federation")
	for _, m := range f.Members {
		fedtest.WantCondition(t, fed, m.Name, kfedv1alpha1.ClusterReady, "True", 20*time.Second)
	}

	if err := f.StopAPIServer("cluster-2"); err != nil {
		t.Fatal(err)
	}
	fedtest.WantCondition(t, fed, "cluster-2", kfedv1alpha1.ClusterOffline, "True", 20*time.Second)
	if got, _ := fedtest.ClusterCondition(context.Background(), fed, "cluster-1", kfedv1alpha1.ClusterReady); got != "True" {
		t.Errorf("cluster-1 Ready=%q while cluster-2 was down, want True", got)
	}

	if err := f.RestartAPIServer(context.Background(), "cluster-2"); err != nil {
		t.Fatal(err)
	}
	fedtest.WantCondition(t, fed, "cluster-2", kfedv1alpha1.ClusterReady, "True", 30*time.Second)
}
