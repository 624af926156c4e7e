package copies

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// A copy that holds every field kfed applies, at kfed's values, with the
// hash of what kfed applies, needs no write; anything else does.
func TestAppliedAndHolds(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	want := func() *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": "shop"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
		}
	}
	w := want()
	u, err := applied(c, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u["status"]; ok {
		t.Error("the applied object carries a status")
	}
	if _, ok := u["metadata"].(map[string]any)["creationTimestamp"]; ok {
		t.Error("the applied object carries a null creationTimestamp")
	}
	if u["kind"] != "Service" || u["apiVersion"] != "v1" {
		t.Errorf("applied kind %v %v, want v1 Service", u["apiVersion"], u["kind"])
	}
	hash := w.Annotations[kfedv1alpha1.AnnotationApplied]
	if w2 := want(); func() string { applied(c, w2); return w2.Annotations[kfedv1alpha1.AnnotationApplied] }() != hash || hash == "" {
		t.Errorf("the hash of equal objects differs or is empty: %q", hash)
	}

	live := func(mutate func(*corev1.Service)) map[string]any {
		s := w.DeepCopy()
		// What the member allocates and others set stays out of the question.
		s.Spec.ClusterIP, s.Spec.Ports[0].NodePort = "10.96.0.7", 31000
		s.Labels["member-only"] = "x"
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "127.1.0.1"}}
		mutate(s)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
		if err != nil {
			t.Fatal(err)
		}
		m["apiVersion"], m["kind"] = u["apiVersion"], u["kind"]
		return m
	}
	for _, tt := range []struct {
		name   string
		mutate func(*corev1.Service)
		holds  bool
	}{
		{"as applied, with what the member added", func(*corev1.Service) {}, true},
		{"a label changed by someone else", func(s *corev1.Service) { s.Labels["team"] = "other" }, false},
		{"a label kfed sets removed", func(s *corev1.Service) { delete(s.Labels, "team") }, false},
		{"the selector changed", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "x"} }, false},
		{"a port added", func(s *corev1.Service) { s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 81}) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := holds(live(tt.mutate), u); got != tt.holds {
				t.Errorf("holds = %v, want %v", got, tt.holds)
			}
		})
	}
}

// Apply sends a request only when the copy the cache holds lacks something
// kfed applies: a reconcile that changes nothing costs nothing.
func TestApplyWritesOnlyWhatChanged(t *testing.T) {
	var applies int
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(), interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			applies++
			return nil
		},
	})
	want := func(team string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": team}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: "TCP"}}},
		}
	}
	cached := want("shop")
	if _, err := applied(c, cached); err != nil {
		t.Fatal(err)
	}
	cached.Spec.ClusterIP = "10.96.0.7" // the member's own
	for _, tt := range []struct {
		name    string
		cur     *corev1.Service
		want    *corev1.Service
		applies int
	}{
		{"absent", nil, want("shop"), 1},
		{"unchanged", cached, want("shop"), 0},
		{"a label changed", cached, want("books"), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			applies = 0
			var cur client.Object
			if tt.cur != nil {
				cur = tt.cur.DeepCopy()
			}
			changed, err := Apply(context.Background(), c, cur, tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if applies != tt.applies || changed != (tt.applies > 0) {
				t.Errorf("%d requests (changed %v), want %d", applies, changed, tt.applies)
			}
		})
	}
}
