package mcs

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// TestAnUnhealthyLoadBalancerIsNotReadyInOtherMembersImports: a Service of
// type LoadBalancer exported in cluster-1 and cluster-2, whose load
// balancers have documentation addresses (written to their status; nothing
// is sent to them), is imported in cluster-3 with both addresses ready; once
// a quorum of checkers reports cluster-2's endpoint down, cluster-3's slice
// holds it not ready and not serving, and ready again once they find it up.
// The checkers are their reports and heartbeats, written as kfed-healthcheck
// writes them: a checker probes only a load balancer it can reach, and the
// dev bed's loopback ones cannot be in an EndpointSlice (its e2e,
// TestLoadBalancerExportGetsAGlobalNameThatFollowsHealthAndRouting, has real
// checkers and DNS).
//
// It is one function over 80 lines: its steps share a bed that takes a
// minute to start, and read in order as the story they check.
func TestAnUnhealthyLoadBalancerIsNotReadyInOtherMembersImports(t *testing.T) {
	f := framework.Start(t, framework.Members(3), framework.MemberCRDs())
	f.JoinAll()
	f.StartController(manager.Options{Federation: "e2e", Domain: "kfed.test", HealthFreshness: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fed := f.Client("federation")
	create(t, f, "federation", framework.Namespace(ns))
	for _, m := range members {
		create(t, f, m, framework.Namespace(ns))
	}
	for i, m := range members[:2] {
		svc := service("web", false)
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		create(t, f, m, svc, export("web"))
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("192.0.2.%d", i+1)}}
		if err := f.Client(m).Status().Update(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}

	// Three checkers, heartbeats every second.
	checkers := []string{"checker-1", "checker-2", "checker-3"}
	report := func(unhealthy ...string) {
		t.Helper()
		for i, name := range checkers {
			r := &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Namespace: kfedv1alpha1.MemberNamespace(members[i]), Name: name,
				Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: "e2e",
					kfedv1alpha1.LabelChecker: name, kfedv1alpha1.LabelCluster: members[i]}},
				Federation: "e2e", Cluster: members[i], Endpoints: 2}
			for _, e := range unhealthy {
				r.Unhealthy = append(r.Unhealthy, kfedv1alpha1.UnhealthyEndpoint{Endpoint: e, Since: metav1.Now(), Reason: "connection refused"})
			}
			r.UnhealthyCount = int32(len(r.Unhealthy))
			var cur kfedv1alpha1.HealthReport
			if err := fed.Get(ctx, client.ObjectKeyFromObject(r), &cur); err == nil {
				r.ResourceVersion = cur.ResourceVersion
				if err := fed.Update(ctx, r); err != nil {
					t.Fatal(err)
				}
			} else if err := fed.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	report()
	go func() {
		for ctx.Err() == nil {
			for i, name := range checkers {
				now := metav1.NewMicroTime(time.Now())
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: kfedv1alpha1.MemberNamespace(members[i]), Name: name,
					Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: "e2e",
						kfedv1alpha1.LabelChecker: name, kfedv1alpha1.LabelCluster: members[i]}},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, AcquireTime: &now, RenewTime: &now}}
				var cur coordinationv1.Lease
				if fed.Get(ctx, client.ObjectKeyFromObject(l), &cur) == nil {
					cur.Spec.RenewTime = &now
					_ = fed.Update(ctx, &cur)
				} else {
					_ = fed.Create(ctx, l)
				}
			}
			time.Sleep(time.Second)
		}
	}()

	// ready is whether cluster-3's slice of source holds address ready and
	// serving.
	ready := func(ctx context.Context, source, address string, want bool) error {
		var slices discoveryv1.EndpointSliceList
		if err := f.Client("cluster-3").List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{
			mcsv1beta1.LabelServiceName: "web", mcsv1beta1.LabelSourceCluster: source}); err != nil {
			return err
		}
		for _, s := range slices.Items {
			for _, ep := range s.Endpoints {
				if len(ep.Addresses) == 1 && ep.Addresses[0] == address {
					r := ep.Conditions.Ready == nil || *ep.Conditions.Ready
					sv := ep.Conditions.Serving == nil || *ep.Conditions.Serving
					if r != want || sv != want {
						return fmt.Errorf("%s in cluster-3's slice of %s: ready %v, serving %v; want %v", address, source, r, sv, want)
					}
					return nil
				}
			}
		}
		return fmt.Errorf("no endpoint %s in cluster-3's slices of %s (%d slices)", address, source, len(slices.Items))
	}
	both := func(c2 bool) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := ready(ctx, "cluster-1", "192.0.2.1", true); err != nil {
				return err
			}
			return ready(ctx, "cluster-2", "192.0.2.2", c2)
		}
	}
	framework.Eventually(t, 30*time.Second, both(true))
	report(kfedv1alpha1.EndpointKey(ns, "web", "cluster-2"))
	framework.Eventually(t, 15*time.Second, both(false))
	report()
	framework.Eventually(t, 15*time.Second, both(true))
}
