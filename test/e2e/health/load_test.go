package health

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/services"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// answersFollowTheLoadsEndpointsPublish (TestAnswersFollowTheLoadsEndpointsPublish)
// is issue #47's e2e: each member's load balancer answers the checkers'
// HTTP probes with the ORCA header of its Service's utilization
// (loopbacklb.UtilizationAnnotation, set on the member's copy as its
// owner would), the real checkers read and publish it, the controller
// weighs the clusters and publishes to BIND, and CoreDNS answers from the
// weights: at the edge (no cluster) by weighted draw, inside cluster-1 its
// own endpoint first until it is more loaded than the others.
func answersFollowTheLoadsEndpointsPublish(t *testing.T, b *healthBed) {
	b.loadCheckers(t)
	ctx := context.Background()
	fed := b.f.Client("federation")
	svc := fedtest.FederatedService("default", "busy")
	svc.Annotations = map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: "/healthz"}
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fed.Delete(context.Background(), svc) })
	const global = "busy.default.e2e.svc.kfed.test."
	load := func(t *testing.T, figures ...string) {
		t.Helper()
		for i, u := range figures {
			setLoad(t, b.f.Client(b.f.Members[i].Name), "busy", u)
		}
	}
	load(t, "0.30", "0.30", "0.30")

	var lb []string
	var ownIP string
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		lb = lb[:0]
		for _, m := range b.f.Members {
			var s corev1.Service
			if err := b.f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "default", Name: "busy"}, &s); err != nil {
				return err
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("no ingress in %s yet", m.Name)
			}
			lb = append(lb, s.Status.LoadBalancer.Ingress[0].IP)
			if m.Name == "cluster-1" {
				ownIP = s.Spec.ClusterIP
			}
		}
		return nil
	})
	c1, err := b.f.Env.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-load-cluster-1", Cluster: "cluster-1", Zone: "kfed.test",
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: "kfed.test", Federation: "e2e", Kubeconfig: fedtest.CoreDNSKubeconfig(t, b.f, "cluster-1"),
			Context: "federation", Cluster: "cluster-1"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c1.Stop)

	// firsts asks server n times and counts whose address comes first:
	// cluster-1's (its load balancer's or, inside it, its cluster IP's) or
	// another's; every answer must hold all three clusters.
	firsts := func(server string, n int) (own int, err error) {
		for range n {
			r, err := fedtest.Query(server, "udp", global, dns.TypeA)
			if err != nil {
				return 0, err
			}
			a := fedtest.AnswerStrings(r)
			if len(a) != 3 {
				return 0, fmt.Errorf("answer %v, want the three clusters", a)
			}
			if a[0] == lb[0] || a[0] == ownIP {
				own++
			}
		}
		return own, nil
	}
	wantLoads := func(t *testing.T, want ...float64) {
		t.Helper()
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			got, err := fedtest.LoadsOf(ctx, fed, client.ObjectKey{Namespace: "default", Name: "busy"})
			if err != nil {
				return err
			}
			for i, u := range want {
				if g, ok := got[b.f.Members[i].Name]; !ok || g < u-0.03 || g > u+0.03 {
					return fmt.Errorf("published loads %v, want %v", got, want)
				}
			}
			return nil
		})
	}
	wantLoads(t, 0.30, 0.30, 0.30)
	// Route53 and Cloud DNS, at their local endpoints, get what the
	// controller publishes, through the sync kfed-controller runs.
	cp := fedtest.ControlPlane{Config: b.f.ControlPlane.Config, Scheme: b.f.Scheme, Federation: "e2e"}
	r53, zoneID := fedtest.StartRoute53Sync(t, cp, "kfed.test")
	gcp := fedtest.StartCloudDNSSync(t, cp, "kfed.test")
	// weights are the weighted records of the global name in Route53 and
	// Cloud DNS, by cluster (Route53's set identifiers; Cloud DNS's items
	// by their address, the cluster's load balancer).
	weights := func() (route53, clouddns map[string]int) {
		route53, clouddns = map[string]int{}, map[string]int{}
		for _, rs := range r53.RecordSets(zoneID) {
			if strings.TrimSuffix(rs.Name, ".") == strings.TrimSuffix(global, ".") && rs.Type == "A" && rs.Weight != nil {
				route53[rs.SetIdentifier] = int(*rs.Weight)
			}
		}
		for _, rs := range gcp.RecordSets("kfed-test", "kfed-test") {
			if strings.TrimSuffix(rs.Name, ".") == strings.TrimSuffix(global, ".") && rs.Type == "A" && rs.RoutingPolicy != nil && rs.RoutingPolicy.Wrr != nil {
				for _, it := range rs.RoutingPolicy.Wrr.Items {
					for i, a := range lb {
						if slices.Contains(it.Rrdatas, a) {
							clouddns[b.f.Members[i].Name] = int(it.Weight)
						}
					}
				}
			}
		}
		return route53, clouddns
	}
	// shifted checks that both providers weigh cluster-1 at most low and the
	// others at least high.
	shifted := func(low, high int) error {
		route53, clouddns := weights()
		for name, w := range map[string]map[string]int{"Route53": route53, "Cloud DNS": clouddns} {
			if len(w) != 3 || w["cluster-1"] > low || w["cluster-2"] < high || w["cluster-3"] < high {
				return fmt.Errorf("%s weighs %v, want cluster-1 at most %d, the others at least %d", name, w, low, high)
			}
		}
		return nil
	}

	t.Run("cluster-1 at 0.97, the others at 0.30: cluster-1 is rarely first at the edge, and not first inside it", func(t *testing.T) {
		load(t, "0.97")
		within(t, 30*time.Second, "the edge's answers", func() error {
			own, err := firsts(b.dns.Addr, 400)
			if err != nil {
				return err
			}
			if own > 20 {
				return fmt.Errorf("cluster-1 first in %d of 400 edge answers, want at most 5%%", own)
			}
			return nil
		})
		within(t, 30*time.Second, "cluster-1's own answers", func() error {
			own, err := firsts(c1.Addr, 200)
			if err != nil {
				return err
			}
			if own > 20 {
				return fmt.Errorf("cluster-1's CoreDNS answers itself first in %d of 200, want another cluster in at least 90%%", own)
			}
			return nil
		})
		within(t, 10*time.Second, "Route53's and Cloud DNS's weights", func() error { return shifted(7, 60) })
	})

	t.Run("cluster-1 back at 0.30: its share returns at the edge, and it is first inside it again", func(t *testing.T) {
		load(t, "0.30")
		within(t, 30*time.Second, "the edge's answers", func() error {
			own, err := firsts(b.dns.Addr, 300)
			if err != nil {
				return err
			}
			if own < 60 {
				return fmt.Errorf("cluster-1 first in %d of 300 edge answers, want about a third", own)
			}
			return nil
		})
		within(t, 30*time.Second, "cluster-1's own answers", func() error {
			if own, err := firsts(c1.Addr, 50); err != nil || own != 50 {
				return fmt.Errorf("cluster-1's CoreDNS answers itself first in %d of 50 (%v), want all", own, err)
			}
			return nil
		})
		within(t, 10*time.Second, "Route53's and Cloud DNS's weights", func() error { return shifted(70, 60) })
	})

	t.Run("every cluster at 0.97: none leaves the answers, and the Service says so", func(t *testing.T) {
		load(t, "0.97", "0.97", "0.97")
		wantLoads(t, 0.97, 0.97, 0.97)
		if _, err := firsts(b.dns.Addr, 50); err != nil {
			t.Fatal(err)
		}
		within(t, 10*time.Second, "BIND's records", func() error { return bindHas(t, b, global, lb...) })
		load(t, "1.2", "1.5", "1.1")
		wantLoads(t, 1.2, 1.5, 1.1)
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			if _, err := firsts(b.dns.Addr, 20); err != nil {
				return err
			}
			var events eventsv1.EventList
			if err := fed.List(ctx, &events, client.InNamespace("default")); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Regarding.Name == "busy" && e.Type == corev1.EventTypeWarning && e.Reason == services.ReasonAllOverTarget {
					return nil
				}
			}
			return fmt.Errorf("no Warning Event %s on default/busy", services.ReasonAllOverTarget)
		})
		within(t, 10*time.Second, "BIND's records", func() error { return bindHas(t, b, global, lb...) })
	})

	t.Run("cluster-1 over its target: an RFC 2136 zone loses its endpoint, and gets it back under it", func(t *testing.T) {
		load(t, "1.2", "0.30", "0.30")
		within(t, 30*time.Second, "BIND's records", func() error { return bindHas(t, b, global, lb[1], lb[2]) })
		if err := fedtest.WantAddresses(b.dns.Addr, "udp", global, dns.TypeA, lb[1], lb[2]); err != nil {
			t.Error(err)
		}
		load(t, "0.30")
		within(t, 30*time.Second, "BIND's records", func() error { return bindHas(t, b, global, lb...) })
	})
}

// loadCheckers starts the bed's checkers again reading loads every second,
// until the test ends.
func (b *healthBed) loadCheckers(t *testing.T) {
	t.Helper()
	hc := fastHC
	hc.checkerArgs = []string{"--load-interval=1s"}
	b.restartCheckers(t, hc)
	t.Cleanup(func() { b.restartCheckers(t, b.hc) })
}

// setLoad has the load balancer of the member Service name report the
// utilization u on its HTTP answers.
func setLoad(t *testing.T, c client.Client, name, u string) {
	t.Helper()
	annotate(t, c, name, map[string]string{loopbacklb.UtilizationAnnotation: u})
}

// bindHas checks that BIND answers name with exactly want.
func bindHas(t *testing.T, b *healthBed, name string, want ...string) error {
	got := b.bind.Answers(t, strings.TrimSuffix(name, "."), dns.TypeA)
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		return fmt.Errorf("BIND answers %v, want %v", got, want)
	}
	return nil
}
