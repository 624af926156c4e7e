package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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
	ns := kfedv1alpha1.MemberNamespace("cluster-1")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e, err := healthcheck.NewEngine(healthcheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{o: Options{Checker: "c1", Cluster: "cluster-1", Federation: "dev", Namespace: "kfed-system", Heartbeat: 10 * time.Second},
		ns: ns, c: c, engine: e, since: map[string]time.Time{}}
	key := client.ObjectKey{Namespace: ns, Name: "c1"}
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

// TestTakesOverTheSeatOfAStoppedChecker: a cluster with one seat, held by
// a checker that reported first, keeps it while that checker's heartbeat
// is fresh; once it stops, an agent that started after it takes the seat
// over (its report and Lease go), as a new pod does after a rollout.
func TestTakesOverTheSeatOfAStoppedChecker(t *testing.T) {
	f := framework.Start(t, framework.Members(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := f.Client("federation")
	ns := kfedv1alpha1.MemberNamespace("cluster-1")
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster-1"}, Spec: kfedv1alpha1.ClusterSpec{
			Region: "us-east1", KubeconfigSecretRef: kfedv1alpha1.SecretKeyRef{Namespace: "kfed-system", Name: "cluster-1"}}},
		&kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns,
			Labels: map[string]string{kfedv1alpha1.LabelFederation: "dev", kfedv1alpha1.LabelChecker: "old"}}, Federation: "dev", Cluster: "cluster-1"},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The old checker's heartbeat, renewed every 100 ms while beating is
	// true, for a second each.
	var beating atomic.Bool
	beating.Store(true)
	go func() {
		for ctx.Err() == nil {
			if beating.Load() {
				now := metav1.NewMicroTime(time.Now())
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns,
					Labels: map[string]string{kfedv1alpha1.LabelFederation: "dev", kfedv1alpha1.LabelChecker: "old"}},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: new("old"), LeaseDurationSeconds: new(int32(1)), RenewTime: &now}}
				if err := c.Create(ctx, l); apierrors.IsAlreadyExists(err) {
					var cur coordinationv1.Lease
					if c.Get(ctx, client.ObjectKeyFromObject(l), &cur) == nil {
						cur.Spec.RenewTime = &now
						_ = c.Update(ctx, &cur)
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second) // "old" is older by a second than "new"'s report

	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: f.ControlPlane.Config, Checker: "new", Cluster: "cluster-1", Federation: "dev",
			Heartbeat: 200 * time.Millisecond, Logger: testr.New(t)})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	exists := func(name string) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &kfedv1alpha1.HealthReport{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return exists("new"), nil
	}); err != nil {
		t.Fatal("the new checker never reported")
	}
	time.Sleep(2 * time.Second) // ten of the new checker's heartbeats
	if !exists("old") {
		t.Fatal("the new checker took the seat of one whose heartbeat is fresh")
	}
	beating.Store(false)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !exists("old"), nil
	}); err != nil {
		t.Fatal("the old checker's report is still there 30 s after its heartbeat stopped")
	}
	// The report goes first, then the Lease: a second delete, which a
	// loaded machine may take a moment to make.
	var leaseErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		leaseErr = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, &coordinationv1.Lease{})
		return apierrors.IsNotFound(leaseErr), nil
	}); err != nil {
		t.Errorf("the old checker's Lease 5 s after its report went: %v, want it gone with its report", leaseErr)
	}
	var clusters kfedv1alpha1.ClusterList
	var reports kfedv1alpha1.HealthReportList
	if err := errors.Join(c.List(ctx, &clusters), c.List(ctx, &reports)); err != nil {
		t.Fatal(err)
	}
	if counted, _ := kfedv1alpha1.Seats(reports.Items, clusters.Items); len(counted) != 1 || counted[0].Name != "new" {
		t.Errorf("counted %v, want the new checker alone", counted)
	}
}
