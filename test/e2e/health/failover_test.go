package health

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

// failoverServesOnePlaceAtATime (TestFailoverServesOnePlaceAtATime) runs an
// active/passive Service on the test bed (cluster-1 and cluster-2 in
// us-east1, cluster-3 in europe-west1) with real API servers, load
// balancers, health checkers, a CoreDNS in each member and BIND:
// with the order europe-west1,us-east1 every answer is cluster-3's; when
// cluster-3's load balancer withdraws its address every answer moves to the
// us-east1 clusters; when it returns, traffic comes back once the failback
// hold has passed; a pin moves it to us-east1 and its release brings it back.
func failoverServesOnePlaceAtATime(t *testing.T, b *healthBed) {
	const zone = "kfed.test"
	srv, f := b.bind, b.f
	ctx := context.Background()
	fed := f.Client("federation")
	const ns = "serves"
	fedtest.Create(t, fed, framework.Namespace(ns))
	binary := fedtest.BuildCoreDNS(t)
	dnsOf := map[string]string{}
	for _, m := range f.Members {
		kubeconfig := fedtest.CoreDNSKubeconfig(t, f, m.Name)
		cd, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
			Binary: binary, Name: "coredns-" + m.Name, Cluster: m.Name, Zone: fedtest.DNSZone,
			Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: fedtest.DNSZone, Federation: "e2e", Cluster: m.Name, Kubeconfig: kubeconfig, Context: "federation"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cd.Stop)
		dnsOf[m.Name] = cd.Addr
	}

	svc := fedtest.FederatedService(ns, "db")
	fedtest.DeleteFederatedAtEnd(t, b.f, svc)
	svc.Annotations = map[string]string{
		kfedv1alpha1.AnnotationRouting:       string(serviceconfig.RoutingFailover),
		kfedv1alpha1.AnnotationFailoverOrder: "europe-west1,us-east1",
		kfedv1alpha1.AnnotationFailbackHold:  "3s",
	}
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(svc)
	global := dnsendpoint.NewNames("e2e", zone, ns, "db").Global()
	// Each cluster's load-balancer and cluster IPs, once every shard has an
	// address.
	lb, clusterIP := map[string]string{}, map[string]string{}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, key, &ep); err != nil {
			return err
		}
		table, err := dnsendpoint.ReadClusters(&ep)
		if err != nil {
			return err
		}
		for _, c := range table {
			if len(c.Addresses) == 0 || len(c.ClusterIPs) == 0 {
				return fmt.Errorf("cluster %s has no address yet", c.Name)
			}
			lb[c.Name], clusterIP[c.Name] = c.Addresses[0].String(), c.ClusterIPs[0].String()
		}
		if len(table) != 3 {
			return fmt.Errorf("%d clusters, want 3", len(table))
		}
		return nil
	})
	// serving waits until BIND and every member's CoreDNS answer the global
	// name with the clusters given and no other: a member's own cluster by
	// its cluster IP, the others by their load balancers.
	serving := func(t *testing.T, within time.Duration, clusters ...string) time.Duration {
		t.Helper()
		start := time.Now()
		framework.Eventually(t, within, func(context.Context) error {
			var errs []error
			var want []string
			for _, c := range clusters {
				want = append(want, lb[c])
			}
			if got := srv.Answers(t, global, dns.TypeA); !sameSet(got, want) {
				errs = append(errs, fmt.Errorf("BIND answers %v, want %v", got, want))
			}
			for member, addr := range dnsOf {
				var want []string
				for _, c := range clusters {
					if c == member {
						want = append(want, clusterIP[c])
					} else {
						want = append(want, lb[c])
					}
				}
				errs = append(errs, fedtest.WantAddresses(addr, "udp", dns.Fqdn(global), dns.TypeA, want...))
			}
			return errors.Join(errs...)
		})
		return time.Since(start)
	}

	t.Run("the first place of the order serves everywhere", func(t *testing.T) {
		serving(t, 30*time.Second, "cluster-3")
		fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionFailover, "True", "serving europe-west1")
	})
	setFailure := func(t *testing.T, mode string) {
		t.Helper()
		member := f.Client("cluster-3")
		var s corev1.Service
		if err := member.Get(ctx, key, &s); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(s.DeepCopy())
		if mode == "" {
			delete(s.Annotations, loopbacklb.FailureAnnotation)
		} else {
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, loopbacklb.FailureAnnotation, mode)
		}
		if err := member.Patch(ctx, &s, patch); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("the first place losing its load balancer moves every answer to the next", func(t *testing.T) {
		setFailure(t, loopbacklb.FailureWithdrawn)
		took := serving(t, 30*time.Second, "cluster-1", "cluster-2")
		t.Logf("every answer moved %v after the address was withdrawn", took.Round(time.Millisecond))
		fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionFailover, "True", "serving us-east1")
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error { return fedtest.WantEvent(ctx, f, svc, "FailedOver") })
	})
	t.Run("the first place back: traffic returns after the failback hold", func(t *testing.T) {
		setFailure(t, "")
		fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionFailover, "True", "up again")
		took := serving(t, 30*time.Second, "cluster-3")
		if took < 2*time.Second {
			t.Errorf("traffic came back %v after the cluster did, within the 3s hold", took)
		}
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error { return fedtest.WantEvent(ctx, f, svc, "FailedBack") })
	})
	pin := func(t *testing.T, place string) {
		t.Helper()
		var s corev1.Service
		if err := fed.Get(ctx, key, &s); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(s.DeepCopy())
		if place == "" {
			delete(s.Annotations, kfedv1alpha1.AnnotationFailoverPin)
		} else {
			s.Annotations[kfedv1alpha1.AnnotationFailoverPin] = place
		}
		if err := fed.Patch(ctx, &s, patch); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a pin moves every answer, and its release brings them back", func(t *testing.T) {
		pin(t, "us-east1")
		serving(t, 30*time.Second, "cluster-1", "cluster-2")
		fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionFailover, "True", "pinned to us-east1")
		pin(t, "")
		serving(t, 30*time.Second, "cluster-3")
	})
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool { return slices.Equal(fedtest.Sorted(a), fedtest.Sorted(b)) }

// failoverFollowsTheCheckersQuorum (TestFailoverFollowsTheCheckersQuorum) runs
// the failover of a Service routed by failover on real health checkers, one per
// member: cluster-3's load balancer refusing connections moves every answer to
// us-east1 within the health bound, and back after the failback hold; a checker
// cut off from cluster-3 alone, at the network level, switches nothing.
func failoverFollowsTheCheckersQuorum(t *testing.T, b *healthBed) {
	fed := b.f.Client("federation")
	ctx := context.Background()
	const ns = "quorum"
	fedtest.Create(t, fed, framework.Namespace(ns))
	db := fedtest.FederatedService(ns, "db")
	fedtest.DeleteFederatedAtEnd(t, b.f, db)
	db.Annotations = map[string]string{
		kfedv1alpha1.AnnotationRouting:       string(serviceconfig.RoutingFailover),
		kfedv1alpha1.AnnotationFailoverOrder: "europe-west1,us-east1",
		kfedv1alpha1.AnnotationFailbackHold:  "3s",
	}
	if err := fed.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	global := "db." + ns + ".e2e.svc.kfed.test."
	// db's load-balancer address in each member.
	lb := make([]string, len(b.f.Members))
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		for i, m := range b.f.Members {
			var s corev1.Service
			if err := b.f.Client(m.Name).Get(ctx, client.ObjectKeyFromObject(db), &s); err != nil {
				return err
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("no ingress in %s yet", m.Name)
			}
			lb[i] = s.Status.LoadBalancer.Ingress[0].IP
		}
		return fedtest.WantAddresses(b.dns.Addr, "udp", global, dns.TypeA, lb[2])
	})
	fail := func(t *testing.T, i int, mode string) {
		t.Helper()
		c := b.f.Client(b.f.Members[i].Name)
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			var s corev1.Service
			if err := c.Get(ctx, client.ObjectKeyFromObject(db), &s); err != nil {
				return err
			}
			if mode == "" {
				delete(s.Annotations, loopbacklb.FailureAnnotation)
			} else {
				metav1.SetMetaDataAnnotation(&s.ObjectMeta, loopbacklb.FailureAnnotation, mode)
			}
			return c.Update(ctx, &s)
		})
	}
	answers := func(want ...string) func() error {
		return func() error { return fedtest.WantAddresses(b.dns.Addr, "udp", global, dns.TypeA, want...) }
	}

	t.Run("the serving place refusing connections fails over within the health bound", func(t *testing.T) {
		fail(t, 2, loopbacklb.FailureRefuse)
		took := within(t, fedtest.HCBound, "every answer in us-east1", answers(lb[0], lb[1]))
		t.Logf("failed over %v after cluster-3 refused", took.Round(time.Millisecond))
		fail(t, 2, "")
		// Back after rise (2 probes) and the 3 s hold.
		took = within(t, fedtest.HCBound+3*time.Second+time.Second, "cluster-3 serves again", answers(lb[2]))
		if took < 3*time.Second {
			t.Errorf("traffic came back %v after cluster-3 did, within the 3 s hold", took)
		}
	})
	t.Run("a checker cut off from the serving place alone switches nothing", func(t *testing.T) {
		cut := fedtest.DropFrom(t, b.sources[0], []string{loopbacklb.Block(b.f.LBBase, 2).String()}, lb[2])
		fedtest.Steady(t, fedtest.HCBound+fedtest.HCFreshness, "cluster-3 keeps serving while checker-cluster-1 cannot reach it", answers(lb[2]))
		cut()
	})
}
