package main

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// failoverCommandPinsAndReleases (TestFailoverCommandPinsAndReleases):
// kfed failover pins a Service routed by failover to a place of its order
// and releases it, and refuses what it cannot pin.
func failoverCommandPinsAndReleases(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	fed := f.Client("federation")
	svc := func(name string, annotations map[string]string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: annotations},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
				Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}},
		}
	}
	for _, s := range []*corev1.Service{
		svc("db", map[string]string{kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "europe-west1,us-east1"}),
		svc("web", nil),
	} {
		fedtest.DeleteAtEnd(t, fed, s.DeepCopy())
		if err := fed.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	pin := func() string {
		var s corev1.Service
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db"}, &s); err != nil {
			t.Fatal(err)
		}
		return s.Annotations[kfedv1alpha1.AnnotationFailoverPin]
	}
	kc := []string{"--kubeconfig", f.Kubeconfig}
	tests := []struct {
		name    string
		args    []string
		errHas  string
		wantPin string
	}{
		{"pins a place of the order", []string{"failover", "db", "--to", "us-east1"}, "", "us-east1"},
		{"refuses a place outside the order", []string{"failover", "db", "--to", "asia-east1"}, `"asia-east1" is not a place`, "us-east1"},
		{"refuses a Service not routed by failover", []string{"failover", "web", "--to", "us-east1"}, "not routed by failover", "us-east1"},
		{"wants one of --to and --auto", []string{"failover", "db"}, "exactly one of", "us-east1"},
		{"releases the pin", []string{"failover", "db", "--auto"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, append(tt.args, kc...)...)
			if tt.errHas == "" && err != nil || tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Fatalf("kfed %s: %v, want an error with %q\n%s", strings.Join(tt.args, " "), err, tt.errHas, out)
			}
			if got := pin(); got != tt.wantPin {
				t.Errorf("pin %q, want %q", got, tt.wantPin)
			}
		})
	}
}
