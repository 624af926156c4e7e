package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// statusAndDNSPlanShowAFederatedService
// (TestStatusAndDNSPlanShowAFederatedService): kfed status shows a federated
// Service, a Balancer and a federated Deployment, as tables and as JSON,
// completion reads live names, and kfed dns plan shows the Service's
// records. It runs kfed's controller with the default options until it
// ends, and deletes what it made first.
func statusAndDNSPlanShowAFederatedService(t *testing.T, f *framework.Federation) {
	t.Cleanup(f.StartController(manager.Options{}))
	ctx := context.Background()
	fed := f.Client("federation")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
		},
	}
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc))
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(svc.Status.Conditions, kfedv1alpha1.ConditionPublished)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "cluster-1, cluster-2") {
			return fmt.Errorf("Published %+v", c)
		}
		return nil
	})

	// A Balancer in the control plane gets a row of its own.
	bal := &kfedv1alpha1.Balancer{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "default"},
		Spec: kfedv1alpha1.BalancerSpec{Replicas: 3,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "fleet"}},
			Targets: []kfedv1alpha1.BalancerTarget{{Name: "a", ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "missing"}}},
			Policy: kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyPriority,
				Priorities: &kfedv1alpha1.PriorityPolicy{TargetOrder: []string{"a"}}}},
	}
	fedtest.DeleteAtEnd(t, fed, bal.DeepCopy())
	if err := fed.Create(ctx, bal); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if err := fed.Get(ctx, client.ObjectKeyFromObject(bal), bal); err != nil {
			return err
		}
		if !meta.IsStatusConditionFalse(bal.Status.Conditions, kfedv1alpha1.BalancerBalanced) {
			return fmt.Errorf("Balancer conditions %+v", bal.Status.Conditions)
		}
		return nil
	})

	// A federated Deployment gets a row per cluster.
	labels := map[string]string{"app": "cart"}
	cart := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "default", Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(4)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "cart:1"}}}}},
	}
	// Its copies in the members go with it (the controller's finalizer).
	fedtest.DeleteAtEnd(t, fed, cart.DeepCopy())
	if err := fed.Create(ctx, cart); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if err := fed.Get(ctx, client.ObjectKeyFromObject(cart), cart); err != nil {
			return err
		}
		if !strings.Contains(cart.Annotations[clusterreplicas.Annotation], `"cluster-2":{"planned":2`) {
			return fmt.Errorf("cart's table: %s", cart.Annotations[clusterreplicas.Annotation])
		}
		return nil
	})

	out, err := run(t, "status", "--kubeconfig", f.Kubeconfig)
	if err != nil {
		t.Fatalf("kfed status: %v\n%s", err, out)
	}
	for _, want := range []string{"default/shop", "cluster-1", "cluster-2", "created", "shop.default.fed.svc.example.com", "Published=True",
		"default/fleet", "Balanced=False (TargetNotFound", "default/cart", "Synced=True",
		// Each member's place: region, zone, and where kfed locates it
		// (us-east1 is Moncks Corner, South Carolina, in kfed's table).
		"CLUSTER", "LOCATION", "us-east1-b", "33."} {
		if !strings.Contains(out, want) {
			t.Errorf("kfed status lacks %q:\n%s", want, out)
		}
	}

	// -o json: the same rows, as objects; -n of another namespace: none
	// of default's; a SERVICE: only its rows.
	out, err = run(t, "status", "--kubeconfig", f.Kubeconfig, "-o", "json")
	if err != nil {
		t.Fatalf("kfed status -o json: %v\n%s", err, out)
	}
	var tables map[string][]map[string]string
	if err := json.Unmarshal([]byte(out), &tables); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, out)
	}
	if rows := tables["services"]; len(rows) < 2 || rows[0]["service"] != "default/shop" || rows[1]["service"] != "default/shop" ||
		rows[1]["cluster"] != "cluster-2" || rows[1]["shard"] != "created" || len(tables["clusters"]) != 2 || len(tables["balancers"]) != 1 {
		t.Errorf("status -o json:\n%s", out)
	}
	if out, err := run(t, "status", "--kubeconfig", f.Kubeconfig, "-n", "other"); err != nil || strings.Contains(out, "default/") {
		t.Errorf("status -n other shows default's objects, or fails: %v\n%s", err, out)
	}
	if out, err := run(t, "status", "nope", "--kubeconfig", f.Kubeconfig); err != nil || strings.Contains(out, "default/shop") {
		t.Errorf("status nope shows default/shop, or fails: %v\n%s", err, out)
	}
	if out, err := run(t, "status", "shop", "--kubeconfig", f.Kubeconfig, "-o", "wide"); err != nil || !strings.Contains(out, "Published=True (") {
		t.Errorf("status shop -o wide does not give the reason of a condition as it should be: %v\n%s", err, out)
	}

	// Completion reads live names: the federated Services, the joined
	// clusters.
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "status", "--kubeconfig", f.Kubeconfig, ""}, []string{"shop"}},
		{[]string{"__complete", "dns", "plan", "-n", "default", "--kubeconfig", f.Kubeconfig, ""}, []string{"shop"}},
		{[]string{"__complete", "failover", "--kubeconfig", f.Kubeconfig, "sh"}, []string{"shop"}},
		{[]string{"__complete", "unjoin", "--kubeconfig", f.Kubeconfig, ""}, []string{"cluster-1\tus-east1", "cluster-2\tus-east1"}},
		{[]string{"__complete", "status", "--kubeconfig", f.Kubeconfig, "--context", ""}, []string{"federation", "cluster-1"}},
	} {
		out, err := run(t, tt.args...)
		for _, w := range tt.want {
			if err != nil || !strings.Contains(out, w+"\n") {
				t.Errorf("kfed %s: %v, want %q among\n%s", strings.Join(tt.args, " "), err, w, out)
			}
		}
	}

	out, err = run(t, "dns", "plan", "shop", "--kubeconfig", f.Kubeconfig, "-o", "json")
	if err != nil {
		t.Fatalf("kfed dns plan: %v\n%s", err, out)
	}
	var recs []record
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("dns plan -o json is not JSON: %v\n%s", err, out)
	}
	global := 0
	for _, r := range recs {
		if r.Name == "shop.default.fed.svc.example.com" && r.Type == "A" {
			global++
		}
		if r.Policy != "weighted" {
			t.Errorf("dns plan shows policy %q for %s, want weighted", r.Policy, r.Name)
		}
	}
	if global != 2 {
		t.Errorf("dns plan shows %d A record sets at the global name, want one per cluster (2):\n%s", global, out)
	}
	if _, err := run(t, "dns", "plan", "nope", "--kubeconfig", f.Kubeconfig); err == nil || !strings.Contains(err.Error(), "default/nope") {
		t.Errorf("plan of a missing Service: %v", err)
	}
}

func TestBalancerRowShowsTargetsAndWhatIsWrong(t *testing.T) {
	b := func(conds ...metav1.Condition) *kfedv1alpha1.Balancer {
		return &kfedv1alpha1.Balancer{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: kfedv1alpha1.BalancerSpec{Replicas: 10,
				Policy: kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyPriority}},
			Status: kfedv1alpha1.BalancerStatus{Replicas: 14, Conditions: conds, Targets: []kfedv1alpha1.BalancerTargetStatus{
				{Name: "b", Replicas: 10, Running: 6, Pending: 4, NotStarted: 4},
				{Name: "c", Replicas: 4, Running: 4},
			}},
		}
	}
	tests := []struct {
		name string
		b    *kfedv1alpha1.Balancer
		want []string
	}{
		{name: "a balanced Balancer falling back shows stuck pods and why",
			b: b(metav1.Condition{Type: kfedv1alpha1.BalancerBalanced, Status: metav1.ConditionTrue, Reason: "TargetsScaled"},
				metav1.Condition{Type: kfedv1alpha1.BalancerFallback, Status: metav1.ConditionTrue, Reason: "StartupTimeout", Message: "pods of b"}),
			want: []string{"shop/web\tcluster-1\t10\t14\tpriority", "b=10/6 (4 pending, 4 past timeout) c=4/4",
				"Balanced=True Fallback=True (StartupTimeout: pods of b)"}},
		{name: "a refused Balancer shows the reason",
			b:    b(metav1.Condition{Type: kfedv1alpha1.BalancerBalanced, Status: metav1.ConditionFalse, Reason: "InvalidPolicy", Message: "targetOrder"}),
			want: []string{"Balanced=False (InvalidPolicy: targetOrder)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := balancerRow(palette{}, "cluster-1", tt.b)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("row %q lacks %q", got, w)
				}
			}
		})
	}
}
