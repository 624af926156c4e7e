package health

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

// proximityOrdersATierByRoundTripTime (TestProximityOrdersATierByRoundTripTime)
// is issue #24's "beyond any peer": the checkers' measured round-trip times
// order clusters that labels do not tell apart, labels stay the first key, and
// loopback's alike RTTs leave the weighted order. Real API servers, the
// controller, checkers probing real load balancers over HTTP, CoreDNS built
// from ./cmd/coredns with the RBAC of deploy/coredns, real queries. Latency is
// made to differ for real: one cluster's load balancers answer 100 ms late
// (loopbacklb's slow mode), and the checkers measure it.
func proximityOrdersATierByRoundTripTime(t *testing.T, b *healthBed) {
	// The bed's checkers, started again to probe over HTTP and measure
	// round-trip times, until the test ends.
	hc := fastHC
	hc.checkerArgs = []string{"--check=http", "--path=/healthz", "--rtt-interval=1s"}
	b.restartCheckers(t, hc)
	t.Cleanup(func() { b.restartCheckers(t, b.hc) })
	b.ready(t)
	ctx := context.Background()
	lb2, lb3 := b.lb[1], b.lb[2]
	fed := b.f.Client("federation")
	var shard1 corev1.Service
	if err := b.f.Client("cluster-1").Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &shard1); err != nil {
		t.Fatal(err)
	}
	bin := fedtest.BuildCoreDNS(t)
	zone := devenv.KfedZone{Zone: "kfed.test", Federation: "e2e", Kubeconfig: fedtest.CoreDNSKubeconfig(t, b.f, "cluster-1"), Context: "federation", Cluster: "cluster-1"}
	c1, err := b.f.Env.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: bin, Name: "coredns-rtt-cluster-1", Cluster: "cluster-1", Zone: "kfed.test", Corefile: devenv.KfedCorefile(zone),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c1.Stop)

	// seconds asks cluster-1's CoreDNS n times and counts who is second.
	seconds := func(n int) (map[string]int, error) {
		got := map[string]int{}
		for range n {
			r, err := fedtest.Query(c1.Addr, "udp", b.global, dns.TypeA)
			if err != nil {
				return nil, err
			}
			a := fedtest.AnswerStrings(r)
			if len(a) != 3 || a[0] != shard1.Spec.ClusterIP {
				return nil, fmt.Errorf("answer %v, want cluster-1's cluster IP %s and two more", a, shard1.Spec.ClusterIP)
			}
			got[a[1]]++
		}
		return got, nil
	}
	// move puts cluster-3 in region (and zone) as its owner would, by its
	// Cluster's spec.
	move := func(t *testing.T, region, zone string) {
		t.Helper()
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			var c kfedv1alpha1.Cluster
			if err := fed.Get(ctx, client.ObjectKey{Name: "cluster-3"}, &c); err != nil {
				return err
			}
			c.Spec.Region, c.Spec.Zones = region, []string{zone}
			return fed.Update(ctx, &c)
		})
	}
	// rtts is what checker-cluster-1 publishes.
	rtts := func(ctx context.Context) (map[string]time.Duration, error) {
		var r kfedv1alpha1.HealthReport
		if err := fed.Get(ctx, client.ObjectKey{Namespace: kfedv1alpha1.MemberNamespace("cluster-1"), Name: "checker-cluster-1"}, &r); err != nil {
			return nil, err
		}
		out := map[string]time.Duration{}
		for _, c := range r.RTTs {
			out[c.Cluster] = c.RTT.Duration
		}
		return out, nil
	}

	// cluster-3 goes back where the bed has it, and cluster-2's load
	// balancers to full speed, when the test ends.
	t.Cleanup(func() { slow(t, b, 1, ""); move(t, "europe-west1", "europe-west1-b") })

	t.Run("cluster-3 moved into cluster-1's region: loopback RTTs are alike, weights share second place", func(t *testing.T) {
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			got, err := rtts(ctx)
			if err != nil {
				return err
			}
			for _, c := range []string{"cluster-2", "cluster-3"} {
				if d, ok := got[c]; !ok || d > 5*time.Millisecond {
					return fmt.Errorf("checker-cluster-1 publishes RTTs %v, want cluster-2 and cluster-3 at loopback's few milliseconds at most", got)
				}
			}
			return nil
		})
		move(t, "us-east1", "us-east1-d")
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			got, err := seconds(200)
			if err != nil {
				return err
			}
			if got[lb2] < 50 || got[lb3] < 50 {
				return fmt.Errorf("second in 200 answers: %v, want cluster-2 (%s) and cluster-3 (%s) in about half each", got, lb2, lb3)
			}
			return nil
		})
	})

	t.Run("cluster-2's load balancers 100 ms away: cluster-3 is second in every answer", func(t *testing.T) {
		slow(t, b, 1, loopbacklb.FailureSlow) // until the test ends (cleanup above)
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			got, err := rtts(ctx)
			if err != nil {
				return err
			}
			if got["cluster-2"] < loopbacklb.SlowDelay*3/4 || got["cluster-3"] > 20*time.Millisecond {
				return fmt.Errorf("checker-cluster-1 publishes RTTs %v, want cluster-2 at about %v and cluster-3 under 20ms", got, loopbacklb.SlowDelay)
			}
			return nil
		})
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			got, err := seconds(200)
			if err != nil {
				return err
			}
			if got[lb3] != 200 {
				return fmt.Errorf("second in 200 answers: %v, want cluster-3 (%s) in all", got, lb3)
			}
			return nil
		})
		// The measure, before buckets, is a metric of the checker.
		body, err := fedtest.Get(ctx, "http://"+b.checkers[0].MetricsAddr+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := metricValue(body, `kfed_healthcheck_rtt_seconds{cluster="cluster-2"}`); !ok || v < loopbacklb.SlowDelay.Seconds() {
			t.Errorf("kfed_healthcheck_rtt_seconds of cluster-2 is %v (present %v), want %v or more", v, ok, loopbacklb.SlowDelay.Seconds())
		}
	})

	t.Run("labels first: cluster-3 back in Europe, slow cluster-2 of the own region is second again", func(t *testing.T) {
		move(t, "europe-west1", "europe-west1-b")
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			got, err := seconds(200)
			if err != nil {
				return err
			}
			if got[lb2] != 200 {
				return fmt.Errorf("second in 200 answers: %v, want cluster-2 (%s) in all", got, lb2)
			}
			return nil
		})
		// cluster-2 was the slower all along.
		if got, err := rtts(ctx); err != nil || got["cluster-2"] < loopbacklb.SlowDelay*3/4 || got["cluster-3"] > 20*time.Millisecond {
			t.Errorf("checker-cluster-1 publishes RTTs %v (%v), want cluster-2 still slow and cluster-3 fast", got, err)
		}
	})
}

// slow switches every load balancer of member i (web's and steady's) to
// mode ("" back to healthy), through the member's API as a user would.
func slow(t *testing.T, b *healthBed, i int, mode string) {
	t.Helper()
	c := b.f.Client(b.f.Members[i].Name)
	for _, name := range []string{"web", "steady"} {
		fedtest.SetFailure(t, c, "default", name, mode)
	}
}

// metricValue reads the sample named series (with its labels, as the text
// format writes them) from a Prometheus text exposition.
func metricValue(body, series string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// coreDNSWithoutRightsToHealthReportsStillServes
// (TestCoreDNSWithoutRightsToHealthReportsStillServes): round-trip times are a
// refinement. A plugin whose identity may read DNSEndpoints but not its
// checkers' HealthReports (its member namespace's RoleBinding gone)
// becomes ready and answers, and says in its log why it orders without
// RTTs.
func coreDNSWithoutRightsToHealthReportsStillServes(t *testing.T, b *healthBed) {
	f := b.f
	ctx := context.Background()
	kubeconfig := fedtest.CoreDNSKubeconfig(t, f, "cluster-1")
	withoutRole(t, f)
	const zone = "kfed.test"
	// StartCoreDNS returns once the zone's SOA is answered: after the
	// first full list of DNSEndpoints, as readiness.
	c, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-no-reports", Cluster: "cluster-1", Zone: zone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: zone, Federation: "e2e", Cluster: "cluster-1", Kubeconfig: kubeconfig, Context: "federation"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	r, err := fedtest.Query(c.Addr, "udp", "nothing.default.e2e.svc."+zone+".", dns.TypeA)
	if err != nil || r.Rcode != dns.RcodeNameError {
		t.Errorf("a name that does not exist: %v, %v; want NXDOMAIN", r, err)
	}
	framework.Eventually(t, 20*time.Second, func(context.Context) error {
		log, err := os.ReadFile(filepath.Join(f.Dir, "logs", "coredns-no-reports.log"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(log), "HealthReports of cluster cluster-1 (ordering clusters without round-trip times meanwhile)") ||
			!strings.Contains(string(log), "forbidden") {
			return fmt.Errorf("the log does not say why RTTs are missing:\n%s", log)
		}
		return nil
	})
}

// withoutRole takes from cluster-1's kfed CoreDNS the RoleBinding of its
// member namespace (the right to read its checkers' HealthReports) until t
// ends, when identity.Ensure gives it back.
func withoutRole(t *testing.T, f *framework.Federation) {
	t.Helper()
	fed := f.Client("federation")
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: kfedv1alpha1.MemberNamespace("cluster-1"), Name: identity.CoreDNS.ServiceAccount()}}
	if err := fed.Delete(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := identity.Ensure(context.Background(), fed, "cluster-1"); err != nil {
			t.Error(err)
		}
	})
}
