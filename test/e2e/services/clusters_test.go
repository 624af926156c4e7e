package services

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"
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
	// Offline, the Cluster is written once a probe (every 300 ms here), not
	// each time the controller sees its own write: that loop wrote it and
	// its ClusterProfile some 35 times a second while the member was down.
	if n := clusterWrites(t, f, "cluster-2", 3*time.Second); n > 15 {
		t.Errorf("cluster-2 was written %d times in 3 s while offline, want at most 15 (one a probe)", n)
	}
	if got, _ := fedtest.ClusterCondition(context.Background(), fed, "cluster-1", kfedv1alpha1.ClusterReady); got != "True" {
		t.Errorf("cluster-1 Ready=%q while cluster-2 was down, want True", got)
	}

	if err := f.RestartAPIServer(context.Background(), "cluster-2"); err != nil {
		t.Fatal(err)
	}
	fedtest.WantCondition(t, fed, "cluster-2", kfedv1alpha1.ClusterReady, "True", 30*time.Second)
}

// clusterWrites counts the changes of the Cluster name seen in window.
func clusterWrites(t *testing.T, f *framework.Federation, name string, window time.Duration) int {
	t.Helper()
	c, err := client.NewWithWatch(f.ControlPlane.Config, client.Options{Scheme: f.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	w, err := c.Watch(ctx, &kfedv1alpha1.ClusterList{}, client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	n := -1 // the watch starts with the Cluster as it is
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return n
			}
			n++
		case <-ctx.Done():
			return n
		}
	}
}
