package services

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

// startFederation starts 1+n clusters with load balancers, joins them and
// runs kfed's controller; it returns when every cluster is Ready.
// stopController stops that controller.
func startFederation(t *testing.T, n int) (f *framework.Federation, stopController func()) {
	t.Helper()
	f = framework.Start(t, framework.Members(n), framework.LoadBalancer())
	f.JoinAll()
	stopController = f.StartController(manager.Options{})
	for _, m := range f.Members {
		fedtest.WantCondition(t, f.Client("federation"), m.Name, "Ready", "True", 20*time.Second)
	}
	return f, stopController
}

// records renders a Service's DNSEndpoint as sorted "name TYPE [cluster]
// targets" lines, the addresses of a name attributed to clusters as kfed's
// readers attribute them, each load-balancer address written as its member.
func records(ctx context.Context, f *framework.Federation, key client.ObjectKey) ([]string, error) {
	var ep extdnsv1alpha1.DNSEndpoint
	if err := f.Client("federation").Get(ctx, key, &ep); err != nil {
		return nil, err
	}
	clusters, err := dnsendpoint.ReadClusters(&ep)
	if err != nil {
		return nil, err
	}
	var lines []string
	for i := range ep.Spec.Endpoints {
		e := &ep.Spec.Endpoints[i]
		if e.RecordType != "A" && e.RecordType != "AAAA" {
			var targets []string
			for _, tg := range e.Targets {
				targets = append(targets, lbOwner(f, tg))
			}
			lines = append(lines, e.DNSName+" "+e.RecordType+" "+strings.Join(targets, ","))
			continue
		}
		groups, err := clusters.Groups(e)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			line := e.DNSName + " " + e.RecordType
			if g.Cluster != nil {
				line += " [" + g.Cluster.Name + "]"
			}
			var targets []string
			for _, a := range g.Addrs {
				targets = append(targets, lbOwner(f, a.String()))
			}
			lines = append(lines, line+" "+strings.Join(targets, ","))
		}
	}
	slices.Sort(lines)
	return lines, nil
}

// lbOwner names the member whose load-balancer block holds addr, or addr.
func lbOwner(f *framework.Federation, addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	for i, m := range f.Members {
		if loopbacklb.Block(f.LBBase, i).Contains(a) {
			return "lb(" + m.Name + ")"
		}
	}
	return addr
}

func wantRecords(t *testing.T, f *framework.Federation, key client.ObjectKey, want []string) {
	t.Helper()
	slices.Sort(want)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		got, err := records(ctx, f, key)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("records\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		return nil
	})
}

// federatedServiceLifecycle unjoins cluster-2: it runs last on its bed.
func federatedServiceLifecycle(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	fed := f.Client("federation")
	if err := fed.Create(ctx, framework.Namespace("shop")); err != nil {
		t.Fatal(err)
	}
	svc := fedtest.FederatedService("shop", "web")
	key := client.ObjectKeyFromObject(svc)
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}

	// Three shards, each with an address from its cluster's block.
	for i, m := range f.Members {
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			var shard corev1.Service
			if err := f.Client(m.Name).Get(ctx, key, &shard); err != nil {
				return err
			}
			if shard.Spec.LoadBalancerClass != nil {
				t.Fatalf("shard in %s kept loadBalancerClass %q", m.Name, *shard.Spec.LoadBalancerClass)
			}
			if len(shard.Status.LoadBalancer.Ingress) != 1 {
				return fmt.Errorf("shard in %s has no ingress yet", m.Name)
			}
			if a := netip.MustParseAddr(shard.Status.LoadBalancer.Ingress[0].IP); !loopbacklb.Block(f.LBBase, i).Contains(a) {
				return fmt.Errorf("shard in %s got %v", m.Name, a)
			}
			return nil
		})
	}
	// The control-plane Service shows the global name.
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if err := fed.Get(ctx, key, svc); err != nil {
			return err
		}
		ing := svc.Status.LoadBalancer.Ingress
		if len(ing) != 1 || ing[0].Hostname != "web.shop.fed.svc.example.com" {
			return fmt.Errorf("ingress %+v", ing)
		}
		return nil
	})
	const (
		global = "web.shop.fed.svc.example.com"
		east   = "web.shop.fed.svc.us-east1.example.com"
		eu     = "web.shop.fed.svc.europe-west1.example.com"
		zoneB  = "web.shop.fed.svc.us-east1-b.us-east1.example.com"
		zoneC  = "web.shop.fed.svc.us-east1-c.us-east1.example.com"
		zoneEU = "web.shop.fed.svc.europe-west1-b.europe-west1.example.com"
		srv    = "_http._tcp.web.shop.fed.svc.example.com"
	)
	full := []string{
		global + " A [cluster-1] lb(cluster-1)", global + " A [cluster-2] lb(cluster-2)", global + " A [cluster-3] lb(cluster-3)",
		east + " A [cluster-1] lb(cluster-1)", east + " A [cluster-2] lb(cluster-2)",
		eu + " A [cluster-3] lb(cluster-3)",
		zoneB + " A [cluster-1] lb(cluster-1)", zoneC + " A [cluster-2] lb(cluster-2)", zoneEU + " A [cluster-3] lb(cluster-3)",
		"cluster-1." + global + " A [cluster-1] lb(cluster-1)",
		"cluster-2." + global + " A [cluster-2] lb(cluster-2)",
		"cluster-3." + global + " A [cluster-3] lb(cluster-3)",
		srv + " SRV 0 1 8080 cluster-1." + global + ".,0 1 8080 cluster-2." + global + ".,0 1 8080 cluster-3." + global + ".",
	}
	wantRecords(t, f, key, full)

	t.Run("malformed annotation freezes the Service with a condition and an Event", func(t *testing.T) {
		patch := client.MergeFrom(svc.DeepCopy())
		metav1.SetMetaDataAnnotation(&svc.ObjectMeta, kfedv1alpha1.AnnotationTTL, "thirty")
		if err := fed.Patch(ctx, svc, patch); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 15*time.Second, func(ctx context.Context) error {
			c, err := fedtest.ServiceCondition(ctx, fed, key, kfedv1alpha1.ConditionValid)
			if err != nil || c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, `kfed.io/ttl="thirty"`) {
				return fmt.Errorf("Valid condition %+v, %v", c, err)
			}
			return nil
		})
		framework.Eventually(t, 15*time.Second, func(ctx context.Context) error {
			return fedtest.WantEvent(ctx, f, svc, "InvalidSpec")
		})
		got, err := records(ctx, f, key)
		if err != nil || !slices.Equal(got, fedtest.Sorted(full)) {
			t.Fatalf("records changed under a bad annotation: %v %v", got, err)
		}
		patch = client.MergeFrom(svc.DeepCopy())
		metav1.SetMetaDataAnnotation(&svc.ObjectMeta, kfedv1alpha1.AnnotationTTL, "60")
		if err := fed.Patch(ctx, svc, patch); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 15*time.Second, func(ctx context.Context) error {
			var ep extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, key, &ep); err != nil {
				return err
			}
			if ep.Spec.Endpoints[0].RecordTTL != 60 {
				return fmt.Errorf("TTL %d", ep.Spec.Endpoints[0].RecordTTL)
			}
			return nil
		})
	})

	t.Run("unjoined cluster's targets leave and its zone turns into a CNAME", func(t *testing.T) {
		if err := clusters.Unjoin(ctx, fed, "cluster-2", time.Minute); err != nil {
			t.Fatal(err)
		}
		// The finalizer removed the shard kfed had created there.
		if err := f.Client("cluster-2").Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("shard in unjoined cluster-2: %v, want it deleted", err)
		}
		wantRecords(t, f, key, []string{
			global + " A [cluster-1] lb(cluster-1)", global + " A [cluster-3] lb(cluster-3)",
			east + " A [cluster-1] lb(cluster-1)",
			eu + " A [cluster-3] lb(cluster-3)",
			zoneB + " A [cluster-1] lb(cluster-1)", zoneC + " CNAME " + east, zoneEU + " A [cluster-3] lb(cluster-3)",
			"cluster-1." + global + " A [cluster-1] lb(cluster-1)",
			"cluster-3." + global + " A [cluster-3] lb(cluster-3)",
			srv + " SRV 0 1 8080 cluster-1." + global + ".,0 1 8080 cluster-3." + global + ".",
		})
	})

	t.Run("deleting the Service removes its shards and records", func(t *testing.T) {
		if err := fed.Delete(ctx, svc); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			for _, name := range []string{"cluster-1", "cluster-3"} {
				var shard corev1.Service
				if err := f.Client(name).Get(ctx, key, &shard); !apierrors.IsNotFound(err) {
					return fmt.Errorf("shard in %s still there (%v)", name, err)
				}
			}
			var ep extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, key, &ep); !apierrors.IsNotFound(err) {
				return fmt.Errorf("DNSEndpoint still there (%v)", err)
			}
			if err := fed.Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("Service still there (%v)", err)
			}
			// The federation's serial marker names the deletion, so every
			// CoreDNS replica's SOA serial moves past it (ADR 0004).
			var marker extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: dnsendpoint.SerialMarker("fed")}, &marker); err != nil {
				return fmt.Errorf("serial marker: %w", err)
			}
			if got := marker.Annotations[dnsendpoint.AnnotationLastDeleted]; got != "shop/web "+string(svc.UID) {
				return fmt.Errorf("serial marker says %q", got)
			}
			return nil
		})
	})
}

func memberOutageDoesNotStopTheOthers(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	fed := f.Client("federation")
	if err := f.StopAPIServer("cluster-2"); err != nil {
		t.Fatal(err)
	}
	fedtest.WantCondition(t, fed, "cluster-2", "Offline", "True", 20*time.Second)

	svc := fedtest.FederatedService("default", "api")
	key := client.ObjectKeyFromObject(svc)
	fedtest.DeleteServicesAtEnd(t, f, key)
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	const global = "api.default.fed.svc.example.com"
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		got, err := records(ctx, f, key)
		if err != nil {
			return err
		}
		want := []string{global + " A [cluster-1] lb(cluster-1)", global + " A [cluster-3] lb(cluster-3)"}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return fmt.Errorf("records lack %q: %v", w, got)
			}
		}
		return nil
	})
	c, err := fedtest.ServiceCondition(ctx, fed, key, kfedv1alpha1.ConditionPlaced)
	if err != nil || c == nil || !strings.Contains(c.Message, "not Ready: cluster-2") {
		t.Errorf("Placed condition %+v, %v; want it to name cluster-2 as not Ready", c, err)
	}

	if err := f.RestartAPIServer(ctx, "cluster-2"); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		got, err := records(ctx, f, key)
		if err != nil {
			return err
		}
		if !slices.Contains(got, global+" A [cluster-2] lb(cluster-2)") {
			return fmt.Errorf("cluster-2 not back in %v", got)
		}
		return nil
	})
}

// A member whose API server hangs when kfed-controller starts (its Cluster
// still Ready, as the last controller left it) holds back no other member:
// each member's cache starts on its own, so the others' shards and records
// come at once, not after the hung member's cache gives up (30 s).
func TestHungMemberAtStartDoesNotDelayTheOthers(t *testing.T) {
	f := framework.Start(t, framework.Members(3), framework.LoadBalancer())
	f.JoinAll()
	ctx := context.Background()
	fed := f.Client("federation")
	for _, m := range f.Members {
		var c kfedv1alpha1.Cluster
		if err := fed.Get(ctx, client.ObjectKey{Name: m.Name}, &c); err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
			Type: kfedv1alpha1.ClusterReady, Status: metav1.ConditionTrue, Reason: "ClusterReady", Message: "as the last controller saw it",
		})
		if err := fed.Status().Update(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}
	// cluster-1 comes first in the work queue; its API server keeps
	// connections open and answers nothing, as a paused VM does.
	if err := f.FreezeAPIServer("cluster-1", true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.FreezeAPIServer("cluster-1", false) })
	f.StartController(manager.Options{})

	svc := fedtest.FederatedService("default", "api")
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	const global = "api.default.fed.svc.example.com"
	framework.Eventually(t, 15*time.Second, func(ctx context.Context) error {
		got, err := records(ctx, f, client.ObjectKeyFromObject(svc))
		if err != nil {
			return err
		}
		for _, w := range []string{global + " A [cluster-2] lb(cluster-2)", global + " A [cluster-3] lb(cluster-3)"} {
			if !slices.Contains(got, w) {
				return fmt.Errorf("records lack %q: %v", w, got)
			}
		}
		return nil
	})
}
