package health

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/framework"
)

// proximityOrdersAnswersByPlace (TestProximityOrdersAnswersByPlace) is issue
// #24's "done when" for the plugin: real API servers, the controller, health
// checkers probing real load balancers, CoreDNS built from ./cmd/coredns, real
// queries. cluster-1 and cluster-2 are in us-east1, cluster-3 in europe-west1,
// all of weight 1, placed by kfed's table of cloud regions.
func proximityOrdersAnswersByPlace(t *testing.T, b *healthBed) {
	ctx := context.Background()
	lb1, lb2, lb3 := b.lb[0], b.lb[1], b.lb[2]
	var shard1 corev1.Service
	if err := b.f.Client("cluster-1").Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &shard1); err != nil {
		t.Fatal(err)
	}
	bin := fedtest.BuildCoreDNS(t)
	kubeconfig := fedtest.CoreDNSKubeconfig(t, b.f, "cluster-1")
	zone := devenv.KfedZone{Zone: "kfed.test", Federation: "e2e", Kubeconfig: kubeconfig, Context: "federation"}
	inside := zone
	inside.Cluster = "cluster-1"
	c1, err := b.f.Env.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: bin, Name: "coredns-cluster-1", Cluster: "cluster-1", Zone: "kfed.test", Corefile: devenv.KfedCorefile(inside),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c1.Stop)
	edge, err := b.f.Env.StartEdgeCoreDNS(ctx, bin, zone)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(edge.Stop)

	// seconds asks cluster-1's CoreDNS n times and counts who is second.
	seconds := func(n int) (map[string]int, error) {
		got := map[string]int{}
		for range n {
			r, err := fedtest.Query(c1.Addr, "udp", b.global, dns.TypeA)
			if err != nil {
				return nil, err
			}
			a := fedtest.AnswerStrings(r)
			if len(a) < 2 || a[0] != shard1.Spec.ClusterIP {
				return nil, fmt.Errorf("answer %v does not start with cluster-1's cluster IP %s", a, shard1.Spec.ClusterIP)
			}
			got[a[1]]++
		}
		return got, nil
	}

	t.Run("from cluster-1's CoreDNS, cluster-2 in its region is second in every answer", func(t *testing.T) {
		framework.Eventually(t, 10*time.Second, func(context.Context) error {
			return fedtest.WantAddresses(c1.Addr, "udp", b.global, dns.TypeA, shard1.Spec.ClusterIP, lb2, lb3)
		})
		got, err := seconds(200)
		if err != nil {
			t.Fatal(err)
		}
		if got[lb2] != 200 {
			t.Errorf("second in 200 answers: %v, want cluster-2 (%s) in all", got, lb2)
		}
	})

	t.Run("a Service routed by weight gets the weighted order at the edge, whatever the subnet", func(t *testing.T) {
		firsts := map[string]int{}
		for range 100 {
			r, err := fedtest.QuerySubnet(edge.Addr, b.global, "198.51.100.0/24")
			if err != nil {
				t.Fatal(err)
			}
			if a := fedtest.AnswerStrings(r); len(a) == 3 {
				firsts[a[0]]++
			}
			if scope, ok := fedtest.SubnetScope(r); !ok || scope != 0 {
				t.Fatalf("reply ECS scope %d (present %v), want 0", scope, ok)
			}
		}
		if len(firsts) != 3 {
			t.Errorf("first answers %v: a Frankfurt client of a weighted Service should get every cluster first now and then", firsts)
		}
	})

	// From here web is routed by proximity, as its owner asks with the
	// Service's annotation.
	routeByProximity(t, b)

	t.Run("from the edge, each client's nearest region comes first, with ECS scope", func(t *testing.T) {
		tests := []struct {
			place, subnet string
			first         []string
		}{
			{"Frankfurt", "198.51.100.0/24", []string{lb3}},
			{"New York", "192.0.2.0/24", []string{lb1, lb2}},
			{"Tokyo (Belgium is nearer than South Carolina)", "203.0.113.0/24", []string{lb3}},
		}
		// The edge hears of the routing through its watch, after the API
		// server has it (routeByProximity): a reply scoped to the subnet
		// says it has.
		framework.Eventually(t, 10*time.Second, func(context.Context) error {
			r, err := fedtest.QuerySubnet(edge.Addr, b.global, tests[0].subnet)
			if err != nil {
				return err
			}
			if scope, ok := fedtest.SubnetScope(r); !ok || scope != 24 {
				return fmt.Errorf("reply ECS scope %d (present %v): the edge does not route by proximity yet", scope, ok)
			}
			return nil
		})
		for _, tt := range tests {
			t.Run(tt.place, func(t *testing.T) {
				firsts := map[string]int{}
				for range 50 {
					r, err := fedtest.QuerySubnet(edge.Addr, b.global, tt.subnet)
					if err != nil {
						t.Fatal(err)
					}
					a := fedtest.AnswerStrings(r)
					if len(a) != 3 || !slices.Contains(tt.first, a[0]) {
						t.Fatalf("answer %v, want it to start with one of %v", a, tt.first)
					}
					firsts[a[0]]++
					if scope, ok := fedtest.SubnetScope(r); !ok || scope != 24 {
						t.Fatalf("reply ECS scope %d (present %v), want 24", scope, ok)
					}
				}
				if len(firsts) != len(tt.first) {
					t.Errorf("first answers %v: clusters at one place are not shared by weight", firsts)
				}
			})
		}
		t.Run("no ECS: the weighted order, no ECS in the reply", func(t *testing.T) {
			firsts := map[string]int{}
			for range 200 {
				r, err := fedtest.Query(edge.Addr, "udp", b.global, dns.TypeA)
				if err != nil {
					t.Fatal(err)
				}
				a := fedtest.AnswerStrings(r)
				if len(a) != 3 {
					t.Fatalf("answer %v, want three clusters", a)
				}
				firsts[a[0]]++
				if _, ok := fedtest.SubnetScope(r); ok {
					t.Fatal("a reply to a query without ECS has ECS")
				}
			}
			for _, lb := range []string{lb1, lb2, lb3} {
				if firsts[lb] < 30 {
					t.Errorf("first answers %v: each of three clusters of weight 1 should be first in about a third", firsts)
				}
			}
		})
		t.Run("a subnet the database does not place: the weighted order, scope 0", func(t *testing.T) {
			r, err := fedtest.QuerySubnet(edge.Addr, b.global, "100.64.0.0/24")
			if err != nil {
				t.Fatal(err)
			}
			if scope, ok := fedtest.SubnetScope(r); !ok || scope != 0 {
				t.Errorf("reply ECS scope %d (present %v), want 0", scope, ok)
			}
		})
	})

	t.Run("with cluster-2's endpoint failing its health checks, cluster-3 is second", func(t *testing.T) {
		b.fail(t, 1, "refuse")
		t.Cleanup(func() { b.fail(t, 1, "") })
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			return fedtest.WantAddresses(c1.Addr, "udp", b.global, dns.TypeA, shard1.Spec.ClusterIP, lb3)
		})
		got, err := seconds(200)
		if err != nil {
			t.Fatal(err)
		}
		if got[lb3] != 200 {
			t.Errorf("second in 200 answers: %v, want cluster-3 (%s) in all", got, lb3)
		}
	})
}

// routeByProximity annotates default/web kfed.io/routing: proximity and waits
// for its DNSEndpoint to say so; when t ends, web is routed by weight
// again, as the bed's other tests expect.
func routeByProximity(t *testing.T, b *healthBed) {
	t.Helper()
	route(t, b, true)
	t.Cleanup(func() { route(t, b, false) })
}

// route sets or removes web's kfed.io/routing: proximity and waits until
// its DNSEndpoint says so.
func route(t *testing.T, b *healthBed, byProximity bool) {
	t.Helper()
	fed := b.f.Client("federation")
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var s corev1.Service
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &s); err != nil {
			return err
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		if byProximity {
			s.Annotations[kfedv1alpha1.AnnotationRouting] = string(serviceconfig.RoutingProximity)
		} else {
			delete(s.Annotations, kfedv1alpha1.AnnotationRouting)
		}
		return fed.Update(ctx, &s)
	})
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &ep); err != nil {
			return err
		}
		if dnsendpoint.ByDistance(&ep) != byProximity {
			return fmt.Errorf("DNSEndpoint default/web has %s=%q", dnsendpoint.AnnotationRouting, ep.Annotations[dnsendpoint.AnnotationRouting])
		}
		return nil
	})
}
