package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/manager"
	"github.com/kfed-io/kfed/services"
	"github.com/kfed-io/kfed/test/framework"
)

func TestStatusAndDNSPlanShowAFederatedService(t *testing.T) {
	f := framework.Start(t, framework.Members(2), framework.LoadBalancer())
	f.JoinAll()
	f.StartController(manager.Options{})
	ctx := context.Background()
	fed := f.Client("federation")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new(services.LoadBalancerClass),
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
		},
	}
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(svc.Status.Conditions, services.CondPublished)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "cluster-1, cluster-2") {
			return fmt.Errorf("Published %+v", c)
		}
		return nil
	})

	out, err := run(t, "status", "--kubeconfig", f.Kubeconfig)
	if err != nil {
		t.Fatalf("kfed status: %v\n%s", err, out)
	}
	for _, want := range []string{"default/shop", "cluster-1", "cluster-2", "created", "shop.default.fed.svc.example.com", "Published=True"} {
		if !strings.Contains(out, want) {
			t.Errorf("kfed status lacks %q:\n%s", want, out)
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
	}
	if global != 2 {
		t.Errorf("dns plan shows %d A record sets at the global name, want one per cluster (2):\n%s", global, out)
	}
	if _, err := run(t, "dns", "plan", "nope", "--kubeconfig", f.Kubeconfig); err == nil || !strings.Contains(err.Error(), "default/nope") {
		t.Errorf("plan of a missing Service: %v", err)
	}
}
