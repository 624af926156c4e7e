package deployments

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

func proportionalPolicy(shares map[string]int32) kfedv1alpha1.BalancerPolicy {
	return kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyProportional,
		Proportions: &kfedv1alpha1.ProportionalPolicy{TargetProportions: shares}}
}

// runningPods counts the running, ready pods of each named Deployment (by
// its pods' target label), and every pod that is not terminating.
func runningPods(ctx context.Context, c client.Client, ns string, names ...string) (running, all []int, err error) {
	for _, n := range names {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"target": n}); err != nil {
			return nil, nil, err
		}
		r, a := 0, 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			a++
			if p.Status.Phase == corev1.PodRunning && fedtest.PodReady(&p) {
				r++
			}
		}
		running, all = append(running, r), append(all, a)
	}
	return running, all, nil
}

// wantRunning waits until exactly want pods of each Deployment run and no
// others exist.
func wantRunning(t testing.TB, c client.Client, ns string, names []string, want []int, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		running, all, err := runningPods(ctx, c, ns, names...)
		if err != nil {
			return err
		}
		if fmt.Sprint(running) != fmt.Sprint(want) || fmt.Sprint(all) != fmt.Sprint(want) {
			return fmt.Errorf("%v run %v of %v pods, want %v", names, running, all, want)
		}
		return nil
	})
}

// balancerInAMember (TestBalancerInAMember) runs the design's case: one
// member with nodes in two zones, one Deployment pinned to each, and
// Balancers over them reconciled by kfed-controller through the member
// registry, with the member's own scheduler, controller manager (Deployment
// and HPA controllers) and KWOK nodes.
func balancerInAMember(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{})
	fedtest.WantCondition(t, f.Client("federation"), "cluster-1", "Ready", "True", 30*time.Second)
	c := f.Client("cluster-1")
	const ns = "default"

	webB, webC := fedtest.Deployment(ns, "web-b", "web", fedtest.ZoneB, 1), fedtest.Deployment(ns, "web-c", "web", fedtest.ZoneC, 1)
	web := fedtest.NewBalancer(ns, "web", "web", 10, proportionalPolicy(map[string]int32{"b": 30, "c": 70}),
		fedtest.BalancerTarget("b", "web-b"), fedtest.BalancerTarget("c", "web-c"))
	webTargets := []string{"web-b", "web-c"}

	t.Run("proportional 30/70 at 10 replicas runs 3 and 7 pods", func(t *testing.T) {
		fedtest.Create(t, c, webB, webC, web)
		fedtest.WantReplicas(t, c, ns, webTargets, []int32{3, 7}, 30*time.Second)
		wantRunning(t, c, ns, webTargets, []int{3, 7}, 60*time.Second)
		fedtest.WantBalancerCondition(t, c, client.ObjectKeyFromObject(web), kfedv1alpha1.BalancerBalanced, "True", kfedv1alpha1.ReasonTargetsScaled, 10*time.Second)
		fedtest.WantClusterEvent(t, f, "cluster-1", web, corev1.EventTypeNormal, "ScaledTarget")
	})

	t.Run("kubectl scale balancer to 20 runs 6 and 14 pods", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(framework.BinDir(t), "kubectl"), "--kubeconfig", f.Kubeconfig, "--context", "cluster-1",
			"scale", "balancer", "web", "--replicas", "20").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl scale: %v\n%s", err, out)
		}
		fedtest.WantReplicas(t, c, ns, webTargets, []int32{6, 14}, 30*time.Second)
		wantRunning(t, c, ns, webTargets, []int{6, 14}, 60*time.Second)
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			var b kfedv1alpha1.Balancer
			if err := c.Get(ctx, client.ObjectKeyFromObject(web), &b); err != nil {
				return err
			}
			if b.Status.Replicas != 20 || b.Status.Selector != "app=web" {
				return fmt.Errorf("status replicas %d selector %q, want 20 and app=web", b.Status.Replicas, b.Status.Selector)
			}
			return nil
		})
	})

	t.Run("an HPA resolves the Balancer as its scale target and the Scale subresource drives it", func(t *testing.T) {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
					APIVersion: kfedv1alpha1.GroupVersion.String(), Kind: "Balancer", Name: "web"},
				MinReplicas: new(int32(1)), MaxReplicas: 40,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
					Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(int32(60))}}}},
			},
		}
		fedtest.Create(t, c, hpa)
		// The Balancer CRD was installed before the controller manager
		// started (MemberCRDs); otherwise its REST mapper would learn it on
		// its next refresh, within 30 s.
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(hpa), hpa); err != nil {
				return err
			}
			for _, cond := range hpa.Status.Conditions {
				if cond.Type == autoscalingv2.AbleToScale {
					if cond.Status != corev1.ConditionTrue {
						return fmt.Errorf("AbleToScale %s: %s: %s", cond.Status, cond.Reason, cond.Message)
					}
					return nil
				}
			}
			return fmt.Errorf("no AbleToScale condition yet: %+v", hpa.Status.Conditions)
		})
		// There is no metrics server, so the HPA itself will not scale; set
		// the Balancer's /scale as it would.
		var scale autoscalingv1.Scale
		if err := c.SubResource("scale").Get(context.Background(), web, &scale); err != nil {
			t.Fatal(err)
		}
		if scale.Spec.Replicas != 20 || scale.Status.Selector != "app=web" {
			t.Fatalf("scale = %+v, want spec 20 and selector app=web", scale)
		}
		scale.Spec.Replicas = 10
		if err := c.SubResource("scale").Update(context.Background(), web, client.WithSubResourceBody(&scale)); err != nil {
			t.Fatal(err)
		}
		fedtest.WantReplicas(t, c, ns, webTargets, []int32{3, 7}, 30*time.Second)
		wantRunning(t, c, ns, webTargets, []int{3, 7}, 60*time.Second)
	})

	t.Run("the example of docs/balancer.md applies as it is and balances", func(t *testing.T) {
		f.Apply("cluster-1", []string{"deploy/examples/balancer.yaml"})
		targets := []string{"web-us-east1-b", "web-us-east1-c"}
		fedtest.WantReplicas(t, c, "shop", targets, []int32{3, 7}, 30*time.Second)
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			var hpa autoscalingv2.HorizontalPodAutoscaler
			if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &hpa); err != nil {
				return err
			}
			for _, cond := range hpa.Status.Conditions {
				if cond.Type == autoscalingv2.AbleToScale && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("HPA conditions %+v", hpa.Status.Conditions)
		})
	})

	t.Run("pods of a target outside spec.selector are reported and the targets keep their replicas", func(t *testing.T) {
		narrow := fedtest.NewBalancer(ns, "narrow", "web", 4, fedtest.PriorityPolicy("b", "c"),
			fedtest.BalancerTarget("b", "web-b"), fedtest.BalancerTarget("c", "web-c"))
		narrow.Spec.Selector.MatchLabels["tier"] = "front" // web's pods have no tier
		fedtest.Create(t, c, narrow)
		fedtest.WantBalancerCondition(t, c, client.ObjectKeyFromObject(narrow), kfedv1alpha1.BalancerBalanced, "False",
			kfedv1alpha1.ReasonSelectorMismatch, 20*time.Second)
		fedtest.WantClusterEvent(t, f, "cluster-1", narrow, corev1.EventTypeWarning, kfedv1alpha1.ReasonSelectorMismatch)
		fedtest.WantReplicas(t, c, ns, webTargets, []int32{3, 7}, 10*time.Second) // unchanged; the bound is for the read on a loaded machine
		if err := c.Delete(context.Background(), narrow); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("priority with fallback starts replicas in the second zone while the first cannot schedule, and takes them back", func(t *testing.T) {
		const timeout = 10 * time.Second
		apiB, apiC := fedtest.Deployment(ns, "api-b", "api", fedtest.ZoneB, 0), fedtest.Deployment(ns, "api-c", "api", fedtest.ZoneC, 0)
		apiTargets := []string{"api-b", "api-c"}
		policy := fedtest.PriorityPolicy("b", "c")
		policy.Fallback = &kfedv1alpha1.Fallback{StartupTimeout: metav1.Duration{Duration: timeout}}
		api := fedtest.NewBalancer(ns, "api", "api", 4, policy, fedtest.BalancerTarget("b", "api-b"), fedtest.BalancerTarget("c", "api-c"))

		f.SetZoneSchedulable("cluster-1", fedtest.ZoneB, false)
		fedtest.Create(t, c, apiB, apiC, api)
		fedtest.WantReplicas(t, c, ns, apiTargets, []int32{4, 0}, 30*time.Second)
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			_, all, err := runningPods(ctx, c, ns, "api-b")
			if err != nil || all[0] != 4 {
				return fmt.Errorf("api-b has %v pods (%v), want 4 pending", all, err)
			}
			return nil
		})
		// After the timeout api-c gets the 4 replicas api-b cannot start.
		// (BenchmarkBalancerFallback measures how soon.)
		fedtest.WantReplicas(t, c, ns, apiTargets, []int32{4, 4}, 60*time.Second)
		wantRunning(t, c, ns, []string{"api-c"}, []int{4}, 60*time.Second)
		fedtest.WantBalancerCondition(t, c, client.ObjectKeyFromObject(api), kfedv1alpha1.BalancerFallback, "True", kfedv1alpha1.ReasonStartupTimeout, 10*time.Second)
		fedtest.WantClusterEvent(t, f, "cluster-1", api, corev1.EventTypeWarning, kfedv1alpha1.ReasonStartupTimeout)

		f.SetZoneSchedulable("cluster-1", fedtest.ZoneB, true)
		wantRunning(t, c, ns, apiTargets, []int{4, 0}, 90*time.Second)
		fedtest.WantReplicas(t, c, ns, apiTargets, []int32{4, 0}, 10*time.Second)
		fedtest.WantBalancerCondition(t, c, client.ObjectKeyFromObject(api), kfedv1alpha1.BalancerFallback, "False", kfedv1alpha1.ReasonAllStarted, 10*time.Second)
	})
}

// balancerInTheControlPlane (TestBalancerInTheControlPlane) runs Balancers
// over Deployments in the federation control plane, which has no pods:
// targets are counted by their scales' status, and the Balancer moves
// spec.replicas between them.
func balancerInTheControlPlane(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{})
	fed := f.Client("federation")
	const ns = "default"
	fedtest.Create(t, fed, fedtest.Deployment(ns, "spot", "fleet", "", 1), fedtest.Deployment(ns, "on-demand", "fleet", "", 1))
	fleet := []string{"spot", "on-demand"}

	t.Run("a Balancer moves replicas between two Deployments", func(t *testing.T) {
		spotFirst := kfedv1alpha1.BalancerTarget{Name: "spot", MaxReplicas: new(int32(3)),
			ScaleTargetRef: fedtest.BalancerTarget("", "spot").ScaleTargetRef}
		b := fedtest.NewBalancer(ns, "fleet", "fleet", 5, fedtest.PriorityPolicy("spot", "on-demand"),
			spotFirst, fedtest.BalancerTarget("on-demand", "on-demand"))
		fedtest.Create(t, fed, b)
		fedtest.WantReplicas(t, fed, ns, fleet, []int32{3, 2}, 30*time.Second)

		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.Targets[0].MaxReplicas = new(int32(5))
		if err := fed.Patch(context.Background(), b, patch); err != nil {
			t.Fatal(err)
		}
		fedtest.WantReplicas(t, fed, ns, fleet, []int32{5, 0}, 30*time.Second)

		patch = client.MergeFrom(b.DeepCopy())
		b.Spec.Policy = proportionalPolicy(map[string]int32{"spot": 1, "on-demand": 4})
		if err := fed.Patch(context.Background(), b, patch); err != nil {
			t.Fatal(err)
		}
		fedtest.WantReplicas(t, fed, ns, fleet, []int32{1, 4}, 30*time.Second)
		fedtest.WantBalancerCondition(t, fed, client.ObjectKeyFromObject(b), kfedv1alpha1.BalancerBalanced, "True", kfedv1alpha1.ReasonTargetsScaled, 10*time.Second)
		if err := fed.Delete(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("targets are any kind with a scale subresource, found through the REST mapper", func(t *testing.T) {
		d := fedtest.Deployment(ns, "rs-web", "mixed", "", 1)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs-web", Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(1)), Selector: d.Spec.Selector, Template: d.Spec.Template}}
		mixed := fedtest.NewBalancer(ns, "mixed", "mixed", 8, proportionalPolicy(map[string]int32{"rs": 1, "deploy": 3}),
			kfedv1alpha1.BalancerTarget{Name: "rs", ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-web"}},
			fedtest.BalancerTarget("deploy", "mixed-web"))
		fedtest.Create(t, fed, rs, fedtest.Deployment(ns, "mixed-web", "mixed", "", 1), mixed)
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			if err := fed.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
				return err
			}
			got, err := fedtest.ReplicasOf(ctx, fed, ns, "mixed-web")
			if err != nil {
				return err
			}
			if *rs.Spec.Replicas != 2 || got[0] != 6 {
				return fmt.Errorf("ReplicaSet %d, Deployment %d; want 2 and 6", *rs.Spec.Replicas, got[0])
			}
			return nil
		})
		if err := fed.Delete(context.Background(), mixed); err != nil {
			t.Fatal(err)
		}
	})

	// Bad input: each Balancer below is refused with a reason and a Warning
	// Event, and the Deployments keep the replicas they have.
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}}
	fedtest.Create(t, fed, settings)
	replicas, err := fedtest.ReplicasOf(context.Background(), fed, ns, fleet...)
	if err != nil {
		t.Fatal(err)
	}
	both := []kfedv1alpha1.BalancerTarget{fedtest.BalancerTarget("spot", "spot"), fedtest.BalancerTarget("on-demand", "on-demand")}
	tests := []struct {
		name   string
		b      *kfedv1alpha1.Balancer
		reason string
	}{
		{"a targetOrder naming a missing target",
			fedtest.NewBalancer(ns, "bad-order", "fleet", 9, fedtest.PriorityPolicy("spot", "reserved"), both...),
			kfedv1alpha1.ReasonInvalidPolicy},
		{"a proportion for an unknown target",
			fedtest.NewBalancer(ns, "bad-proportions", "fleet", 9, proportionalPolicy(map[string]int32{"spot": 1, "reserved": 1}), both...),
			kfedv1alpha1.ReasonInvalidPolicy},
		{"min above max",
			fedtest.NewBalancer(ns, "bad-limits", "fleet", 9, fedtest.PriorityPolicy("spot", "on-demand"),
				kfedv1alpha1.BalancerTarget{Name: "spot", MinReplicas: new(int32(4)), MaxReplicas: new(int32(2)),
					ScaleTargetRef: both[0].ScaleTargetRef}, both[1]),
			kfedv1alpha1.ReasonInvalidSpec},
		{"a target without a scale subresource",
			fedtest.NewBalancer(ns, "bad-kind", "fleet", 9, fedtest.PriorityPolicy("spot", "settings"), both[0],
				kfedv1alpha1.BalancerTarget{Name: "settings", ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
					APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}}),
			kfedv1alpha1.ReasonNoScaleSubresource},
		{"a target that does not exist",
			fedtest.NewBalancer(ns, "bad-target", "fleet", 9, fedtest.PriorityPolicy("spot", "gone"), both[0], fedtest.BalancerTarget("gone", "gone")),
			kfedv1alpha1.ReasonTargetNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is reported and the targets keep their replicas", func(t *testing.T) {
			fedtest.Create(t, fed, tt.b)
			key := client.ObjectKeyFromObject(tt.b)
			fedtest.WantBalancerCondition(t, fed, key, kfedv1alpha1.BalancerBalanced, "False", tt.reason, 20*time.Second)
			fedtest.WantClusterEvent(t, f, "federation", tt.b, corev1.EventTypeWarning, tt.reason)
			got, err := fedtest.ReplicasOf(context.Background(), fed, ns, fleet...)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(replicas) {
				t.Fatalf("targets have %v replicas, want them kept at %v", got, replicas)
			}
			if err := fed.Delete(context.Background(), tt.b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// memberWithoutBalancerAccessStillServesServices
// (TestMemberWithoutBalancerAccessStillServesServices) joins a member whose
// kfed identity has the member role from before Balancers (Services and
// Namespaces only) and whose API serves Balancers: kfed must not watch what
// it may not read there, and must federate Services as before. It needs the
// member not joined, and at its end gives kfed the member's full
// kubeconfig (so that it may clean up there) and unjoins it.
func memberWithoutBalancerAccessStillServesServices(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	m := f.Client("cluster-1")
	const ns, sa = "kfed-system", "kfed-member-old"
	fedtest.Create(t, m, framework.Namespace(ns),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}})
	raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	raw.AuthInfos["cluster-1"] = &clientcmdapi.AuthInfo{Token: f.Token("cluster-1", ns, sa)}
	fed := f.Client("federation")
	if _, err := clusters.Join(ctx, fed, clusters.JoinOptions{Name: "cluster-1", Region: f.Members[0].Region,
		Zones: f.Members[0].Zones, Kubeconfig: raw}); err != nil {
		t.Fatal(err)
	}
	startController(t, f, manager.Options{})
	t.Cleanup(func() { unjoinWithFullAccess(t, f, "cluster-1") })
	svc := fedtest.FederatedService("default", "web")
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc))
	fedtest.Create(t, fed, svc)
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), kfedv1alpha1.ConditionPublished, "True", "cluster-1")
}
