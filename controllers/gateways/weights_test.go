package gateways

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
)

func TestRouteBackends(t *testing.T) {
	ref := func(name string, mod func(*gatewayv1.BackendRef)) gatewayv1.BackendRef {
		b := gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name)}}
		if mod != nil {
			mod(&b)
		}
		return b
	}
	grp := func(g string) *gatewayv1.Group { v := gatewayv1.Group(g); return &v }
	knd := func(k string) *gatewayv1.Kind { v := gatewayv1.Kind(k); return &v }
	ns := func(n string) *gatewayv1.Namespace { v := gatewayv1.Namespace(n); return &v }
	weight := func(w int32) *int32 { return &w }
	http := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{
			{BackendRefs: []gatewayv1.HTTPBackendRef{
				{BackendRef: ref("web", nil)},
				{BackendRef: ref("canary", func(b *gatewayv1.BackendRef) { b.Weight = weight(10) })},
				{BackendRef: ref("drained", func(b *gatewayv1.BackendRef) { b.Weight = weight(0) })},
			}},
			{BackendRefs: []gatewayv1.HTTPBackendRef{
				{BackendRef: ref("explicit", func(b *gatewayv1.BackendRef) { b.Group, b.Kind, b.Namespace = grp(""), knd("Service"), ns("shop") })},
				{BackendRef: ref("other-tenant", func(b *gatewayv1.BackendRef) { b.Namespace = ns("billing") })},
				{BackendRef: ref("bucket", func(b *gatewayv1.BackendRef) { b.Group, b.Kind = grp("storage.example.com"), knd("Bucket") })},
			}},
		}},
	}
	grpc := &gatewayv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: gatewayv1.GRPCRouteSpec{Rules: []gatewayv1.GRPCRouteRule{
			{BackendRefs: []gatewayv1.GRPCBackendRef{{BackendRef: ref("api", nil)}}},
		}},
	}
	for _, tt := range []struct {
		name  string
		route client.Object
		want  []string
	}{
		{"Services of the route's namespace count, a weight 0, another namespace's and other kinds not", http, []string{"web", "canary", "explicit"}},
		{"a GRPCRoute's backends count", grpc, []string{"api"}},
	} {
		if got := routeBackends(tt.route); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIngressBackends(t *testing.T) {
	svc := func(name string) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name}}
	}
	path := func(b networkingv1.IngressBackend) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Backend: b}
	}
	def := svc("fallback")
	ing := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{
		DefaultBackend: &def,
		Rules: []networkingv1.IngressRule{
			{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{path(svc("web")), path(networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}})},
			}}},
			{Host: "bare.example.com"},
		},
	}}
	if got, want := ingressBackends(ing), []string{"fallback", "web"}; !slices.Equal(got, want) {
		t.Errorf("backends %v, want %v (resource backends are no Services)", got, want)
	}
}

// TestDecideWeights: a cluster weighs its ready replicas of the federated
// Deployments behind the backends; 0 keeps its addresses published (it is
// answered last); without any, every cluster weighs 1.
func TestDecideWeights(t *testing.T) {
	placed := joined(cluster("cluster-1", ""), cluster("cluster-2", ""), cluster("cluster-3", ""))
	members := map[string]memberCopy{
		"cluster-1": {outcome: publish.Serving, addrs: addrs("127.1.200.1")},
		"cluster-2": {outcome: publish.Serving, addrs: addrs("127.2.200.1")},
		"cluster-3": {outcome: publish.Serving, addrs: addrs("127.3.200.1")},
	}
	for _, tt := range []struct {
		name    string
		weights publish.Weights
		want    string
	}{
		{"ready replicas per cluster, 0 where none runs", publish.Weights{"cluster-1": 6, "cluster-2": 2}, "map[cluster-1:6 cluster-2:2 cluster-3:0]"},
		{"backends selecting no federated Deployment: every cluster weighs 1", nil, "map[cluster-1:1 cluster-2:1 cluster-3:1]"},
		{"no ready backend anywhere: every cluster weighs 0 and stays published", publish.Weights{"cluster-1": 0}, "map[cluster-1:0 cluster-2:0 cluster-3:0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(observation{verdicts: []tenancy.Verdict{{Hostname: "shop.example.com"}}, placed: placed, members: members, ttl: 30, weights: tt.weights})
			got := map[string]int{}
			for _, c := range d.clusters {
				got[c.Name] = c.Weight
			}
			if fmt.Sprint(got) != tt.want {
				t.Errorf("weights %v, want %s", got, tt.want)
			}
			if r := records(d.endpoints); !slices.Equal(r, []string{"shop.example.com A 127.1.200.1,127.2.200.1,127.3.200.1"}) {
				t.Errorf("records %q: every cluster's address stays published whatever its weight", r)
			}
		})
	}
}
