package gateways

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A checker's report names a DNSEndpoint; the health trigger reconciles
// the object of the reconciler's kind that publishes it, and nothing for
// any other DNSEndpoint.
func TestObjectOfEndpoint(t *testing.T) {
	gw := &reconciler{Controller: &Controller{Namespace: "kfed-system"}, k: gatewayKind{}}
	ing := &reconciler{Controller: &Controller{Namespace: "kfed-system"}, k: ingressKind{}}
	tests := []struct {
		name string
		r    *reconciler
		ep   types.NamespacedName
		want string // "" for none
	}{
		{"a Gateway's DNSEndpoint", gw, types.NamespacedName{Namespace: "kfed-system", Name: "gateway.shop.front"}, "shop/front"},
		{"a name with dots stays whole", gw, types.NamespacedName{Namespace: "kfed-system", Name: "gateway.shop.front.v2"}, "shop/front.v2"},
		{"an Ingress's, for the Ingress reconciler", ing, types.NamespacedName{Namespace: "kfed-system", Name: "ingress.shop.web"}, "shop/web"},
		{"an Ingress's is not a Gateway's", gw, types.NamespacedName{Namespace: "kfed-system", Name: "ingress.shop.web"}, ""},
		{"a Service's DNSEndpoint is no Gateway's", gw, types.NamespacedName{Namespace: "shop", Name: "gateway.shop.front"}, ""},
		{"a name without namespace and name", gw, types.NamespacedName{Namespace: "kfed-system", Name: "gateway.front"}, ""},
	}
	for _, tt := range tests {
		key, ok := tt.r.objectOf(tt.ep)
		got := ""
		if ok {
			got = key.String()
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if ok && tt.r.endpointKey(key) != tt.ep {
			t.Errorf("%s: endpointKey(%s) = %s, not %s", tt.name, key, tt.r.endpointKey(key), tt.ep)
		}
	}
}
