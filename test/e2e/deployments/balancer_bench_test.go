package deployments

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// balancerReconciles is how many Balancer reconciles of cluster this
// process has counted.
func balancerReconciles(t testing.TB, cluster string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "kfed_balancer_reconciles_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// BenchmarkBalancerReaction measures, 20 times, the time from a change of a
// Balancer's spec.replicas in a member (with its scheduler, controller
// manager and KWOK nodes running) to all three targets' spec.replicas
// holding the new plan, as a watch on the Deployments sees it. Run with
// -benchtime=1x.
func BenchmarkBalancerReaction(b *testing.B) {
	const samples = 20
	for range b.N {
		b.StopTimer()
		f := framework.Start(b, framework.Members(1), framework.Workloads(2, "4"),
			framework.Zones(fedtest.ZoneB, fedtest.ZoneC), framework.MemberCRDs())
		f.JoinAll()
		f.StartController(manager.Options{})
		fedtest.WantCondition(b, f.Client("federation"), "cluster-1", "Ready", "True", 30*time.Second)
		c := f.Client("cluster-1")
		const ns = "default"
		names := []string{"r-a", "r-b", "r-c"}
		var targets []kfedv1alpha1.BalancerTarget
		for _, n := range names {
			fedtest.Create(b, c, fedtest.Deployment(ns, n, "reaction", "", 0))
			targets = append(targets, fedtest.BalancerTarget(n, n))
		}
		bal := fedtest.NewBalancer(ns, "reaction", "reaction", 3,
			proportionalPolicy(map[string]int32{"r-a": 1, "r-b": 1, "r-c": 1}), targets...)
		fedtest.Create(b, c, bal)
		fedtest.WantReplicas(b, c, ns, names, []int32{1, 1, 1}, 30*time.Second)

		w, err := f.Clientset("cluster-1").AppsV1().Deployments(ns).Watch(context.Background(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		seen := map[string]int32{}
		var took []time.Duration
		for i := range samples {
			per := int32(2 + i%2) // alternate 6 and 9 replicas: 2 or 3 each
			patch := client.MergeFrom(bal.DeepCopy())
			bal.Spec.Replicas = 3 * per
			start := time.Now()
			if err := c.Patch(context.Background(), bal, patch); err != nil {
				b.Fatal(err)
			}
			timeout := time.After(30 * time.Second)
			for done := false; !done; {
				select {
				case ev := <-w.ResultChan():
					if d, ok := ev.Object.(*appsv1.Deployment); ok && ev.Type == watch.Modified {
						seen[d.Name] = *d.Spec.Replicas
					}
					done = seen["r-a"] == per && seen["r-b"] == per && seen["r-c"] == per
				case <-timeout:
					b.Fatalf("sample %d: targets at %v, want %d each", i, seen, per)
				}
			}
			took = append(took, time.Since(start))
		}
		w.Stop()
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
		b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "ms-p90")
		b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "ms-max")
		b.Logf("reaction times: %v", took)
	}
}

// BenchmarkBalancerFallback measures, 5 times, the time from the last pod
// of a target in a zone that cannot schedule passing the startup timeout
// (by its creationTimestamp, the clock the controller applies, which has
// second resolution) to the fallback target having all its replacement
// pods, as a watch on pods sees them. Priority over zones b then c, 4
// replicas, a 3 s timeout. Run with -benchtime=1x.
func BenchmarkBalancerFallback(b *testing.B) {
	const (
		samples = 5
		timeout = 3 * time.Second
		ns      = "default"
	)
	for range b.N {
		b.StopTimer()
		f := framework.Start(b, framework.Members(1), framework.Workloads(4, "4"),
			framework.Zones(fedtest.ZoneB, fedtest.ZoneC), framework.MemberCRDs())
		f.JoinAll()
		f.StartController(manager.Options{})
		fedtest.WantCondition(b, f.Client("federation"), "cluster-1", "Ready", "True", 30*time.Second)
		c := f.Client("cluster-1")
		names := []string{"fb-b", "fb-c"}
		fedtest.Create(b, c, fedtest.Deployment(ns, "fb-b", "fb", fedtest.ZoneB, 0), fedtest.Deployment(ns, "fb-c", "fb", fedtest.ZoneC, 0))
		policy := fedtest.PriorityPolicy("b", "c")
		policy.Fallback = &kfedv1alpha1.Fallback{StartupTimeout: metav1.Duration{Duration: timeout}}
		bal := fedtest.NewBalancer(ns, "fb", "fb", 0, policy, fedtest.BalancerTarget("b", "fb-b"), fedtest.BalancerTarget("c", "fb-c"))
		fedtest.Create(b, c, bal)
		setReplicas := func(n int32) {
			patch := client.MergeFrom(bal.DeepCopy())
			bal.Spec.Replicas = n
			if err := c.Patch(context.Background(), bal, patch); err != nil {
				b.Fatal(err)
			}
		}
		var took []time.Duration
		for i := range samples {
			f.SetZoneSchedulable("cluster-1", fedtest.ZoneB, false)
			w, err := f.Clientset("cluster-1").CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: "target=fb-c"})
			if err != nil {
				b.Fatal(err)
			}
			setReplicas(4)
			var stuckAt time.Time
			framework.Eventually(b, 30*time.Second, func(ctx context.Context) error {
				var pods corev1.PodList
				if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"target": "fb-b"}); err != nil {
					return err
				}
				if len(pods.Items) != 4 {
					return fmt.Errorf("fb-b has %d pods, want 4", len(pods.Items))
				}
				for _, p := range pods.Items {
					if at := p.CreationTimestamp.Add(timeout); at.After(stuckAt) {
						stuckAt = at
					}
				}
				return nil
			})
			seen := map[string]bool{}
			deadline := time.After(60 * time.Second)
			for len(seen) < 4 {
				select {
				case ev := <-w.ResultChan():
					if ev.Type == watch.Added {
						seen[ev.Object.(*corev1.Pod).Name] = true
					}
				case <-deadline:
					b.Fatalf("sample %d: fb-c has %d pods after 60 s, want 4", i, len(seen))
				}
			}
			took = append(took, time.Since(stuckAt))
			w.Stop()
			// Capacity returns: back to fb-b, then to nothing for the next sample.
			f.SetZoneSchedulable("cluster-1", fedtest.ZoneB, true)
			wantRunning(b, c, ns, names, []int{4, 0}, 60*time.Second)
			setReplicas(0)
			wantRunning(b, c, ns, names, []int{0, 0}, 60*time.Second)
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
		b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "ms-max")
		b.Logf("fallback reaction times: %v", took)
	}
}

// BenchmarkReconcile200Balancers measures the time from creating 200
// Balancers of 3 targets each in a member (600 Deployments made beforehand)
// to every target holding its planned replicas, and the API requests the
// controller sent (control plane and member, watches included) per
// reconcile. The member runs no controller manager, so there are no pods:
// it measures the controller, not the Deployment controller. Run with
// -benchtime=1x.
func BenchmarkReconcile200Balancers(b *testing.B) {
	const n = 200
	for range b.N {
		b.StopTimer()
		f := framework.Start(b, framework.Members(1), framework.MemberCRDs())
		f.JoinAll()
		var requests atomic.Int64
		f.StartController(manager.Options{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return fedtest.CountingTransport{Next: rt, N: &requests}
		}})
		fedtest.WantCondition(b, f.Client("federation"), "cluster-1", "Ready", "True", 30*time.Second)
		cfg := rest.CopyConfig(f.Cluster("cluster-1").Config)
		cfg.QPS, cfg.Burst = -1, 0
		c, err := client.New(cfg, client.Options{Scheme: f.Scheme})
		if err != nil {
			b.Fatal(err)
		}
		const ns = "default"
		parallel(b, n, func(i int) error {
			for _, t := range []string{"a", "b", "c"} {
				if err := c.Create(context.Background(), fedtest.Deployment(ns, fmt.Sprintf("b%03d-%s", i, t), fmt.Sprintf("b%03d", i), "", 0)); err != nil {
					return err
				}
			}
			return nil
		})
		// Let the Deployment events of the setup drain before counting.
		time.Sleep(2 * time.Second)
		before, reconciles := requests.Load(), balancerReconciles(b, "cluster-1")
		b.StartTimer()
		start := time.Now()
		parallel(b, n, func(i int) error {
			app := fmt.Sprintf("b%03d", i)
			var targets []kfedv1alpha1.BalancerTarget
			for _, t := range []string{"a", "b", "c"} {
				targets = append(targets, fedtest.BalancerTarget(t, app+"-"+t))
			}
			return c.Create(context.Background(), fedtest.NewBalancer(ns, app, app, 6,
				proportionalPolicy(map[string]int32{"a": 1, "b": 1, "c": 1}), targets...))
		})
		framework.Eventually(b, 10*time.Minute, func(ctx context.Context) error {
			var list appsv1.DeploymentList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return err
			}
			done := 0
			for _, d := range list.Items {
				if *d.Spec.Replicas == 2 {
					done++
				}
			}
			if done != 3*n {
				return fmt.Errorf("%d of %d targets scaled", done, 3*n)
			}
			return nil
		})
		elapsed := time.Since(start)
		b.StopTimer()
		// Let the status writes' own reconciles finish before counting.
		time.Sleep(2 * time.Second)
		recs := balancerReconciles(b, "cluster-1") - reconciles
		reqs := float64(requests.Load() - before)
		b.ReportMetric(elapsed.Seconds(), "s/200balancers")
		b.ReportMetric(n/elapsed.Seconds(), "balancers/s")
		b.ReportMetric(recs, "reconciles")
		b.ReportMetric(reqs/recs, "requests/reconcile")
		b.ReportMetric(reqs/n, "requests/balancer")
	}
}

// parallel runs fn(0) … fn(n-1) on 8 goroutines.
func parallel(b *testing.B, n int, fn func(i int) error) {
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if err := fn(i); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
