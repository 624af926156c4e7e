package agent

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/test/framework"
)

// TestWritesAgainstARealAPIServer: the report is written when its content
// changes and not otherwise, its RTTs survive the CRD's schema, the
// heartbeat Lease is created then renewed, and retiring deletes both.
func TestWritesAgainstARealAPIServer(t *testing.T) {
	f := framework.Start(t, framework.Members(1))
	ctx := context.Background()
	c := f.Client("federation")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kfed-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e, err := healthcheck.NewEngine(healthcheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{o: Options{Checker: "c1", Cluster: "cluster-1", Federation: "dev", Namespace: "kfed-system", Heartbeat: 10 * time.Second},
		c: c, engine: e, since: map[string]time.Time{}}
	key := client.ObjectKey{Namespace: "kfed-system", Name: "c1"}
	stored := func() *kfedv1alpha1.HealthReport {
		t.Helper()
		var r kfedv1alpha1.HealthReport
		if err := c.Get(ctx, key, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}

	t.Run("the report is created, then left alone while nothing changes", func(t *testing.T) {
		if err := a.writeReport(ctx); err != nil {
			t.Fatal(err)
		}
		first := stored()
		if first.Cluster != "cluster-1" || first.Labels[kfedv1alpha1.LabelCluster] != "cluster-1" {
			t.Errorf("report %+v", first)
		}
		if err := a.writeReport(ctx); err != nil {
			t.Fatal(err)
		}
		if again := stored(); again.ResourceVersion != first.ResourceVersion {
			t.Errorf("a report with nothing new was written: version %s → %s", first.ResourceVersion, again.ResourceVersion)
		}
	})

	t.Run("RTTs are written when a bucket moves, and stored as written", func(t *testing.T) {
		before := stored().ResourceVersion
		a.rtts.update(map[string]time.Duration{"cluster-2": 80 * time.Millisecond})
		if err := a.writeReport(ctx); err != nil {
			t.Fatal(err)
		}
		r := stored()
		if r.ResourceVersion == before || len(r.RTTs) != 1 || r.RTTs[0] != a.rtts.published()[0] {
			t.Errorf("stored RTTs %v (version %s, before %s), want %v", r.RTTs, r.ResourceVersion, before, a.rtts.published())
		}
	})

	t.Run("the heartbeat is created, then renewed", func(t *testing.T) {
		if err := a.renew(ctx); err != nil {
			t.Fatal(err)
		}
		var l coordinationv1.Lease
		if err := c.Get(ctx, key, &l); err != nil {
			t.Fatal(err)
		}
		if *l.Spec.HolderIdentity != "c1" || *l.Spec.LeaseDurationSeconds != 40 {
			t.Errorf("lease holder %s for %ds, want c1 for 40s", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds)
		}
		first := l.Spec.RenewTime.Time
		time.Sleep(10 * time.Millisecond)
		if err := a.renew(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, key, &l); err != nil {
			t.Fatal(err)
		}
		if !l.Spec.RenewTime.After(first) {
			t.Errorf("renew time %v, not after %v", l.Spec.RenewTime.Time, first)
		}
	})

	t.Run("retiring deletes the report and the heartbeat, and may be repeated", func(t *testing.T) {
		for range 2 {
			if err := a.retire(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Get(ctx, key, &kfedv1alpha1.HealthReport{}); !apierrors.IsNotFound(err) {
			t.Errorf("report after retiring: %v", err)
		}
		if err := c.Get(ctx, key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
			t.Errorf("lease after retiring: %v", err)
		}
	})
}
