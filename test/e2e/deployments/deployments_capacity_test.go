package deployments

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/deployments"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// federatedDeploymentCapacity (TestFederatedDeploymentCapacity) shrinks a
// member's nodes so that its pods cannot be scheduled, and sees the
// replicas move to the other members within the threshold and 15 s, two of
// them waiting where they were; with the nodes restored, the layout returns
// to the preferences. With KFED_CAPACITY_TRIALS=n it repeats that n times
// and logs the times.
func federatedDeploymentCapacity(t *testing.T, f *framework.Federation) {
	const threshold = 5 * time.Second
	startController(t, f, manager.Options{UnschedulableThreshold: threshold})
	fed := f.Client("federation")
	for _, m := range fedtest.MemberNames {
		fedtest.WantCondition(t, fed, m, kfedv1alpha1.ClusterReady, "True", 30*time.Second)
	}
	const ns = "capacity"
	deleteDeploymentsAtEnd(t, f, ns)
	// The nodes grow back even when a trial fails half way.
	t.Cleanup(func() { f.SetNodeCPU("cluster-2", "8") })
	fedtest.Create(t, fed, framework.Namespace(ns))
	web := fedtest.FederatedDeployment(ns, "web", 50, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
	key := client.ObjectKeyFromObject(web)
	fedtest.Create(t, fed, web)
	fedtest.WantReadyLayout(t, f, key, []int32{16, 17, 17}, true, 50, 90*time.Second)
	preferred, err := fedtest.CopyReplicas(context.Background(), f, ns, "web")
	if err != nil {
		t.Fatal(err)
	}

	trials := 1
	if n, err := strconv.Atoi(os.Getenv("KFED_CAPACITY_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	var away, back []time.Duration
	for trial := range trials {
		t.Run(fmt.Sprintf("trial %d", trial+1), func(t *testing.T) {
			// cluster-2 loses its machines and gets two that hold 5 pods each.
			start := time.Now()
			f.SetNodeCPU("cluster-2", "500m")
			err := f.Client("cluster-2").DeleteAllOf(context.Background(), &corev1.Pod{},
				client.InNamespace(ns), client.MatchingLabels{"app": "web"}, client.GracePeriodSeconds(0))
			if err != nil {
				t.Fatal(err)
			}
			// 10 run in cluster-2 and 2 wait there; the others take 40.
			fedtest.WantReadyLayout(t, f, key, []int32{20, 12, 20}, false, 50, threshold+15*time.Second)
			away = append(away, time.Since(start))
			wantDeploymentEvent(t, f, key, corev1.EventTypeWarning, deployments.ReasonCapacityLimited)

			start = time.Now()
			f.SetNodeCPU("cluster-2", "8")
			fedtest.WantReadyLayout(t, f, key, preferred, false, 50, 60*time.Second)
			back = append(back, time.Since(start))
			wantDeploymentEvent(t, f, key, corev1.EventTypeNormal, deployments.ReasonCapacityRestored)
		})
	}
	t.Logf("threshold %v, %d trials: replicas running elsewhere after %v (median %v); preferred layout back after %v (median %v)",
		threshold, trials, away, median(away), back, median(back))
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// federatedDeploymentMemberOutage (TestFederatedDeploymentMemberOutage)
// stops a member's API server under the preferences of scenario 4 (equal
// weights, cluster-3 capped at 20): for less than the grace period nothing
// moves; past it, cluster-2's replicas are planned on the others as the
// scenario says (cluster-1 30, cluster-3 20); back, the layout returns to
// the preferences.
func federatedDeploymentMemberOutage(t *testing.T, f *framework.Federation) {
	const grace = 10 * time.Second
	startController(t, f, manager.Options{MemberGracePeriod: grace})
	fed := f.Client("federation")
	for _, m := range fedtest.MemberNames {
		fedtest.WantCondition(t, fed, m, kfedv1alpha1.ClusterReady, "True", 30*time.Second)
	}
	const ns = "outage"
	deleteDeploymentsAtEnd(t, f, ns)
	fedtest.Create(t, fed, framework.Namespace(ns))
	web := fedtest.FederatedDeployment(ns, "web", 50, `{"rebalance": true, "clusters": {"*": {"weight": 1}, "cluster-3": {"maxReplicas": 20, "weight": 1}}}`)
	key := client.ObjectKeyFromObject(web)
	fedtest.Create(t, fed, web)
	fedtest.WantReadyLayout(t, f, key, []int32{16, 17, 17}, true, 50, 90*time.Second)
	preferred, err := fedtest.CopyReplicas(context.Background(), f, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	stayUp := []string{"cluster-1", "cluster-3"}
	preferredUp := []int32{preferred[0], preferred[2]}
	// The two members that stay up, as they run now.
	upReplicas := func(ctx context.Context) ([]int32, error) {
		var out []int32
		for _, m := range stayUp {
			var d appsv1.Deployment
			if err := f.Client(m).Get(ctx, key, &d); err != nil {
				return nil, err
			}
			out = append(out, *d.Spec.Replicas)
		}
		return out, nil
	}

	if err := f.StopAPIServer("cluster-2"); err != nil {
		t.Fatal(err)
	}
	// Back even when the test fails before it brings it back (a no-op then).
	t.Cleanup(func() {
		if err := f.RestartAPIServer(context.Background(), "cluster-2"); err != nil {
			t.Error(err)
		}
	})
	fedtest.WantCondition(t, fed, "cluster-2", kfedv1alpha1.ClusterReady, "False", 20*time.Second)
	// The grace period runs from the condition's transition, which the API
	// server's own shutdown may precede StopAPIServer's return by seconds.
	var c2 kfedv1alpha1.Cluster
	if err := fed.Get(context.Background(), client.ObjectKey{Name: "cluster-2"}, &c2); err != nil {
		t.Fatal(err)
	}
	offline := meta.FindStatusCondition(c2.Status.Conditions, kfedv1alpha1.ClusterReady).LastTransitionTime.Time
	t.Logf("cluster-2 not Ready since %v, %v ago", offline, time.Since(offline))

	t.Run("within the grace period nothing moves", func(t *testing.T) {
		// Transition times have whole seconds: stop checking 2 s early.
		for time.Since(offline) < grace-2*time.Second {
			got, err := upReplicas(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, preferredUp) {
				t.Fatalf("cluster-2 %v offline: cluster-1 and cluster-3 run %v, want %v still", time.Since(offline), got, preferredUp)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("past the grace period its replicas are planned on the others: cluster-1 30, cluster-3 20 (scenario 4)", func(t *testing.T) {
		framework.Eventually(t, grace+15*time.Second, func(ctx context.Context) error {
			got, err := upReplicas(ctx)
			if err != nil {
				return err
			}
			if !slices.Equal(got, []int32{30, 20}) {
				return fmt.Errorf("cluster-1 and cluster-3 run %v, want 30 and 20", got)
			}
			return nil
		})
		t.Logf("replicas planned elsewhere %v after cluster-2 went offline (grace %v)", time.Since(offline), grace)
	})

	t.Run("back, the layout returns to the preferences", func(t *testing.T) {
		if err := f.RestartAPIServer(context.Background(), "cluster-2"); err != nil {
			t.Fatal(err)
		}
		fedtest.WantCondition(t, fed, "cluster-2", kfedv1alpha1.ClusterReady, "True", 30*time.Second)
		fedtest.WantReadyLayout(t, f, key, preferred, false, 50, 60*time.Second)
	})
}
