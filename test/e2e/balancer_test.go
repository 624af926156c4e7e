package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/manager"
	"github.com/kfed-io/kfed/services"
	"github.com/kfed-io/kfed/test/framework"
)

const (
	zoneB = "us-east1-b"
	zoneC = "us-east1-c"
)

// deployment is a Deployment of app with replicas, its pods labelled with
// app and the target's name, pinned to zone when one is given.
func deployment(ns, name, app, zone string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": app, "target": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: app + ":1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"),
					}},
				}}},
			},
		},
	}
	if zone != "" {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
	}
	return d
}

func balancerTarget(name, deployment string) kfedv1alpha1.BalancerTarget {
	return kfedv1alpha1.BalancerTarget{Name: name, ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: deployment}}
}

func newBalancer(ns, name, app string, replicas int32, policy kfedv1alpha1.BalancerPolicy, targets ...kfedv1alpha1.BalancerTarget) *kfedv1alpha1.Balancer {
	return &kfedv1alpha1.Balancer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kfedv1alpha1.BalancerSpec{
			Replicas: replicas, Targets: targets, Policy: policy,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}

func proportionalPolicy(shares map[string]int32) kfedv1alpha1.BalancerPolicy {
	return kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyProportional,
		Proportions: &kfedv1alpha1.ProportionalPolicy{TargetProportions: shares}}
}

func priorityPolicy(order ...string) kfedv1alpha1.BalancerPolicy {
	return kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyPriority,
		Priorities: &kfedv1alpha1.PriorityPolicy{TargetOrder: order}}
}

// replicasOf returns the spec.replicas of each named Deployment.
func replicasOf(ctx context.Context, c client.Client, ns string, names ...string) ([]int32, error) {
	var out []int32
	for _, n := range names {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &d); err != nil {
			return nil, err
		}
		out = append(out, *d.Spec.Replicas)
	}
	return out, nil
}

// wantReplicas waits until the named Deployments' spec.replicas are want.
func wantReplicas(t testing.TB, c client.Client, ns string, names []string, want []int32, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		got, err := replicasOf(ctx, c, ns, names...)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%v have replicas %v, want %v", names, got, want)
		}
		return nil
	})
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
			if p.Status.Phase == corev1.PodRunning && podReady(&p) {
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

func wantBalancerCondition(t testing.TB, c client.Client, key client.ObjectKey, typ, status, reason string, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		var b kfedv1alpha1.Balancer
		if err := c.Get(ctx, key, &b); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(b.Status.Conditions, typ)
		if cond == nil || string(cond.Status) != status || cond.Reason != reason || cond.ObservedGeneration != b.Generation {
			return fmt.Errorf("Balancer %s condition %s = %+v, want %s %s for generation %d", key, typ, cond, status, reason, b.Generation)
		}
		return nil
	})
}

// wantClusterEvent waits for an Event of reason about obj in cluster.
func wantClusterEvent(t testing.TB, f *framework.Federation, cluster string, obj client.Object, typ, reason string) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		evs, err := f.Clientset(cluster).CoreV1().Events(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Balancer" && e.InvolvedObject.Name == obj.GetName() && e.Reason == reason && e.Type == typ {
				return nil
			}
		}
		return fmt.Errorf("no %s Event %s for Balancer %s among %d", typ, reason, obj.GetName(), len(evs.Items))
	})
}

func create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// TestBalancerInAMember runs the design's case: one member with nodes in two
// zones, one Deployment pinned to each, and Balancers over them reconciled by
// kfed-controller through the member registry, with the member's own
// scheduler, controller manager (Deployment and HPA controllers) and KWOK
// nodes.
func TestBalancerInAMember(t *testing.T) {
	f := framework.Start(t, framework.Members(1), framework.Workloads(4, "4"),
		framework.Zones(zoneB, zoneC), framework.MemberCRDs())
	f.JoinAll()
	f.StartController(manager.Options{})
	wantCondition(t, f.Client("federation"), "cluster-1", "Ready", "True", 30*time.Second)
	c := f.Client("cluster-1")
	const ns = "default"

	webB, webC := deployment(ns, "web-b", "web", zoneB, 1), deployment(ns, "web-c", "web", zoneC, 1)
	web := newBalancer(ns, "web", "web", 10, proportionalPolicy(map[string]int32{"b": 30, "c": 70}),
		balancerTarget("b", "web-b"), balancerTarget("c", "web-c"))
	webTargets := []string{"web-b", "web-c"}

	t.Run("proportional 30/70 at 10 replicas runs 3 and 7 pods", func(t *testing.T) {
		create(t, c, webB, webC, web)
		wantReplicas(t, c, ns, webTargets, []int32{3, 7}, 30*time.Second)
		wantRunning(t, c, ns, webTargets, []int{3, 7}, 60*time.Second)
		wantBalancerCondition(t, c, client.ObjectKeyFromObject(web), kfedv1alpha1.BalancerBalanced, "True", kfedv1alpha1.ReasonTargetsScaled, 10*time.Second)
		wantClusterEvent(t, f, "cluster-1", web, corev1.EventTypeNormal, "ScaledTarget")
	})

	t.Run("kubectl scale balancer to 20 runs 6 and 14 pods", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(framework.BinDir(t), "kubectl"), "--kubeconfig", f.Kubeconfig, "--context", "cluster-1",
			"scale", "balancer", "web", "--replicas", "20").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl scale: %v\n%s", err, out)
		}
		wantReplicas(t, c, ns, webTargets, []int32{6, 14}, 30*time.Second)
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
		create(t, c, hpa)
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
		wantReplicas(t, c, ns, webTargets, []int32{3, 7}, 30*time.Second)
		wantRunning(t, c, ns, webTargets, []int{3, 7}, 60*time.Second)
	})

	t.Run("the example of docs/balancer.md applies as it is and balances", func(t *testing.T) {
		f.Apply("cluster-1", []string{"deploy/examples/balancer.yaml"})
		targets := []string{"web-us-east1-b", "web-us-east1-c"}
		wantReplicas(t, c, "shop", targets, []int32{3, 7}, 30*time.Second)
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
		narrow := newBalancer(ns, "narrow", "web", 4, priorityPolicy("b", "c"),
			balancerTarget("b", "web-b"), balancerTarget("c", "web-c"))
		narrow.Spec.Selector.MatchLabels["tier"] = "front" // web's pods have no tier
		create(t, c, narrow)
		wantBalancerCondition(t, c, client.ObjectKeyFromObject(narrow), kfedv1alpha1.BalancerBalanced, "False",
			kfedv1alpha1.ReasonSelectorMismatch, 20*time.Second)
		wantClusterEvent(t, f, "cluster-1", narrow, corev1.EventTypeWarning, kfedv1alpha1.ReasonSelectorMismatch)
		wantReplicas(t, c, ns, webTargets, []int32{3, 7}, time.Second)
		if err := c.Delete(context.Background(), narrow); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("priority with fallback starts replicas in the second zone while the first cannot schedule, and takes them back", func(t *testing.T) {
		const timeout = 10 * time.Second
		apiB, apiC := deployment(ns, "api-b", "api", zoneB, 0), deployment(ns, "api-c", "api", zoneC, 0)
		apiTargets := []string{"api-b", "api-c"}
		policy := priorityPolicy("b", "c")
		policy.Fallback = &kfedv1alpha1.Fallback{StartupTimeout: metav1.Duration{Duration: timeout}}
		api := newBalancer(ns, "api", "api", 4, policy, balancerTarget("b", "api-b"), balancerTarget("c", "api-c"))

		f.SetZoneSchedulable("cluster-1", zoneB, false)
		create(t, c, apiB, apiC, api)
		wantReplicas(t, c, ns, apiTargets, []int32{4, 0}, 30*time.Second)
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			_, all, err := runningPods(ctx, c, ns, "api-b")
			if err != nil || all[0] != 4 {
				return fmt.Errorf("api-b has %v pods (%v), want 4 pending", all, err)
			}
			return nil
		})
		// After the timeout api-c gets the 4 replicas api-b cannot start.
		// (BenchmarkBalancerFallback measures how soon.)
		wantReplicas(t, c, ns, apiTargets, []int32{4, 4}, 60*time.Second)
		wantRunning(t, c, ns, []string{"api-c"}, []int{4}, 60*time.Second)
		wantBalancerCondition(t, c, client.ObjectKeyFromObject(api), kfedv1alpha1.BalancerFallback, "True", kfedv1alpha1.ReasonStartupTimeout, 10*time.Second)
		wantClusterEvent(t, f, "cluster-1", api, corev1.EventTypeWarning, kfedv1alpha1.ReasonStartupTimeout)

		f.SetZoneSchedulable("cluster-1", zoneB, true)
		wantRunning(t, c, ns, apiTargets, []int{4, 0}, 90*time.Second)
		wantReplicas(t, c, ns, apiTargets, []int32{4, 0}, 10*time.Second)
		wantBalancerCondition(t, c, client.ObjectKeyFromObject(api), kfedv1alpha1.BalancerFallback, "False", kfedv1alpha1.ReasonAllStarted, 10*time.Second)
	})
}

// TestBalancerInTheControlPlane runs Balancers over Deployments in the
// federation control plane, which has no pods: targets are counted by their
// scales' status, and the Balancer moves spec.replicas between them.
func TestBalancerInTheControlPlane(t *testing.T) {
	f := framework.Start(t, framework.Members(1))
	f.JoinAll()
	f.StartController(manager.Options{})
	fed := f.Client("federation")
	const ns = "default"
	create(t, fed, deployment(ns, "spot", "fleet", "", 1), deployment(ns, "on-demand", "fleet", "", 1))
	fleet := []string{"spot", "on-demand"}

	t.Run("a Balancer moves replicas between two Deployments", func(t *testing.T) {
		spotFirst := kfedv1alpha1.BalancerTarget{Name: "spot", MaxReplicas: new(int32(3)),
			ScaleTargetRef: balancerTarget("", "spot").ScaleTargetRef}
		b := newBalancer(ns, "fleet", "fleet", 5, priorityPolicy("spot", "on-demand"),
			spotFirst, balancerTarget("on-demand", "on-demand"))
		create(t, fed, b)
		wantReplicas(t, fed, ns, fleet, []int32{3, 2}, 30*time.Second)

		patch := client.MergeFrom(b.DeepCopy())
		b.Spec.Targets[0].MaxReplicas = new(int32(5))
		if err := fed.Patch(context.Background(), b, patch); err != nil {
			t.Fatal(err)
		}
		wantReplicas(t, fed, ns, fleet, []int32{5, 0}, 30*time.Second)

		patch = client.MergeFrom(b.DeepCopy())
		b.Spec.Policy = proportionalPolicy(map[string]int32{"spot": 1, "on-demand": 4})
		if err := fed.Patch(context.Background(), b, patch); err != nil {
			t.Fatal(err)
		}
		wantReplicas(t, fed, ns, fleet, []int32{1, 4}, 30*time.Second)
		wantBalancerCondition(t, fed, client.ObjectKeyFromObject(b), kfedv1alpha1.BalancerBalanced, "True", kfedv1alpha1.ReasonTargetsScaled, 10*time.Second)
		if err := fed.Delete(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("targets are any kind with a scale subresource, found through the REST mapper", func(t *testing.T) {
		d := deployment(ns, "rs-web", "mixed", "", 1)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs-web", Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(1)), Selector: d.Spec.Selector, Template: d.Spec.Template}}
		mixed := newBalancer(ns, "mixed", "mixed", 8, proportionalPolicy(map[string]int32{"rs": 1, "deploy": 3}),
			kfedv1alpha1.BalancerTarget{Name: "rs", ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-web"}},
			balancerTarget("deploy", "mixed-web"))
		create(t, fed, rs, deployment(ns, "mixed-web", "mixed", "", 1), mixed)
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			if err := fed.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
				return err
			}
			got, err := replicasOf(ctx, fed, ns, "mixed-web")
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
	create(t, fed, settings)
	replicas, err := replicasOf(context.Background(), fed, ns, fleet...)
	if err != nil {
		t.Fatal(err)
	}
	both := []kfedv1alpha1.BalancerTarget{balancerTarget("spot", "spot"), balancerTarget("on-demand", "on-demand")}
	tests := []struct {
		name   string
		b      *kfedv1alpha1.Balancer
		reason string
	}{
		{"a targetOrder naming a missing target",
			newBalancer(ns, "bad-order", "fleet", 9, priorityPolicy("spot", "reserved"), both...),
			kfedv1alpha1.ReasonInvalidPolicy},
		{"a proportion for an unknown target",
			newBalancer(ns, "bad-proportions", "fleet", 9, proportionalPolicy(map[string]int32{"spot": 1, "reserved": 1}), both...),
			kfedv1alpha1.ReasonInvalidPolicy},
		{"min above max",
			newBalancer(ns, "bad-limits", "fleet", 9, priorityPolicy("spot", "on-demand"),
				kfedv1alpha1.BalancerTarget{Name: "spot", MinReplicas: new(int32(4)), MaxReplicas: new(int32(2)),
					ScaleTargetRef: both[0].ScaleTargetRef}, both[1]),
			kfedv1alpha1.ReasonInvalidSpec},
		{"a target without a scale subresource",
			newBalancer(ns, "bad-kind", "fleet", 9, priorityPolicy("spot", "settings"), both[0],
				kfedv1alpha1.BalancerTarget{Name: "settings", ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
					APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}}),
			kfedv1alpha1.ReasonNoScaleSubresource},
		{"a target that does not exist",
			newBalancer(ns, "bad-target", "fleet", 9, priorityPolicy("spot", "gone"), both[0], balancerTarget("gone", "gone")),
			kfedv1alpha1.ReasonTargetNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is reported and the targets keep their replicas", func(t *testing.T) {
			create(t, fed, tt.b)
			key := client.ObjectKeyFromObject(tt.b)
			wantBalancerCondition(t, fed, key, kfedv1alpha1.BalancerBalanced, "False", tt.reason, 20*time.Second)
			wantClusterEvent(t, f, "federation", tt.b, corev1.EventTypeWarning, tt.reason)
			got, err := replicasOf(context.Background(), fed, ns, fleet...)
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

// TestMemberWithoutBalancerAccessStillServesServices joins a member whose
// kfed identity has the member role from before Balancers (Services and
// Namespaces only) and whose API serves Balancers: kfed must not watch what
// it may not read there, and must federate Services as before.
func TestMemberWithoutBalancerAccessStillServesServices(t *testing.T) {
	f := framework.Start(t, framework.Members(1), framework.LoadBalancer(), framework.MemberCRDs())
	ctx := context.Background()
	m := f.Client("cluster-1")
	const ns, sa = "kfed-system", "kfed-member-old"
	create(t, m, framework.Namespace(ns),
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
	f.StartController(manager.Options{})
	svc := federatedService("default", "web")
	create(t, fed, svc)
	wantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), services.CondPublished, "True", "cluster-1")
}
