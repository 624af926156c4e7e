package deployments

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// BenchmarkReconcile500Deployments measures the time from creating 500
// federated Deployments of 3 replicas (kfed.io/federated: "true") in the
// control plane to every member holding a copy of each with 1 replica and
// every control-plane Deployment its per-cluster table, and the API requests
// (control plane and members, watches included) the controller sent per
// Deployment. The members run no controller manager, so no pods: this
// measures kfed's controller. Run with -benchtime=1x.
func BenchmarkReconcile500Deployments(b *testing.B) {
	const n = 500
	for range b.N {
		b.StopTimer()
		f := framework.Start(b, framework.Members(3))
		f.JoinAll()
		var requests atomic.Int64
		f.StartController(manager.Options{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return fedtest.CountingTransport{Next: rt, N: &requests}
		}})
		fed := f.Client("federation")
		for _, m := range f.Members {
			fedtest.WantCondition(b, fed, m.Name, "Ready", "True", 20*time.Second)
		}
		cfg := rest.CopyConfig(f.ControlPlane.Config)
		cfg.QPS, cfg.Burst = -1, 0
		creator, err := client.New(cfg, client.Options{Scheme: f.Scheme})
		if err != nil {
			b.Fatal(err)
		}
		before := requests.Load()
		b.StartTimer()
		start := time.Now()

		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					d := fedtest.Deployment("default", fmt.Sprintf("dep-%04d", i), fmt.Sprintf("dep-%04d", i), "", 3)
					d.Annotations = map[string]string{kfedv1alpha1.AnnotationFederated: "true"}
					if err := creator.Create(context.Background(), d); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
		framework.Eventually(b, 10*time.Minute, func(ctx context.Context) error {
			for _, m := range fedtest.MemberNames {
				var list appsv1.DeploymentList
				if err := f.Client(m).List(ctx, &list, client.InNamespace("default")); err != nil {
					return err
				}
				copies := 0
				for _, d := range list.Items {
					if d.Spec.Replicas != nil && *d.Spec.Replicas == 1 {
						copies++
					}
				}
				if copies != n {
					return fmt.Errorf("%s holds %d copies of 1 replica, want %d", m, copies, n)
				}
			}
			var list appsv1.DeploymentList
			if err := fed.List(ctx, &list, client.InNamespace("default")); err != nil {
				return err
			}
			tabled := 0
			for _, d := range list.Items {
				if _, ok := d.Annotations[clusterreplicas.Annotation]; ok && len(d.Status.Conditions) > 0 {
					tabled++
				}
			}
			if tabled != n {
				return fmt.Errorf("%d of %d federated Deployments have their table and status", tabled, n)
			}
			return nil
		})
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(elapsed.Seconds(), "s/500dep")
		b.ReportMetric(float64(requests.Load()-before)/n, "requests/dep")
	}
}
