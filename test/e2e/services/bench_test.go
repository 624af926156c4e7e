package services

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// BenchmarkReconcile1000Services measures the time from creating 1,000
// federated Services in the control plane to all their DNSEndpoints holding
// the three members' records, and the API requests (control plane and
// members, watches included) the controller sent per Service. Run with
// -benchtime=1x: each iteration is a whole federation.
func BenchmarkReconcile1000Services(b *testing.B) {
	const n = 1000
	for range b.N {
		b.StopTimer()
		f := framework.Start(b, framework.Members(3), framework.LoadBalancer())
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
					if err := creator.Create(context.Background(), fedtest.FederatedService("default", fmt.Sprintf("svc-%04d", i))); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
		framework.Eventually(b, 10*time.Minute, func(ctx context.Context) error {
			return allPublished(ctx, fed, n, 3)
		})
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(elapsed.Seconds(), "s/1000svc")
		b.ReportMetric(float64(requests.Load()-before)/n, "requests/svc")
	}
}
