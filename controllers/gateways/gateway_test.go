package gateways

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// federatedGatewayFixture has a listener with a hostname (api) and one
// without (open), both on distinct ports.
func federatedGatewayFixture() *gatewayv1.Gateway {
	api := gatewayv1.Hostname("api.example.com")
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "front"},
		Spec: gatewayv1.GatewaySpec{Listeners: []gatewayv1.Listener{
			{Name: "api", Hostname: &api, Port: 443, Protocol: gatewayv1.HTTPSProtocolType},
			{Name: "open", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
		}},
	}
}

// routesFixture: a route on the whole Gateway (its hostnames count: the
// Gateway has a listener without hostname), one on the open listener, one
// on the listener with a hostname (its hostnames do not count), one on
// another Gateway, one naming the Gateway in another namespace, and a
// GRPCRoute on the whole Gateway.
func routesFixture() []client.Object {
	section := func(s string) *gatewayv1.SectionName { v := gatewayv1.SectionName(s); return &v }
	other := gatewayv1.Namespace("other")
	route := func(name string, ref gatewayv1.ParentReference, hosts ...gatewayv1.Hostname) client.Object {
		return &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{ref}},
				Hostnames:       hosts,
			},
		}
	}
	return []client.Object{
		route("whole", gatewayv1.ParentReference{Name: "front"}, "shop.example.com"),
		route("open", gatewayv1.ParentReference{Name: "front", SectionName: section("open")}, "www.example.com"),
		route("api", gatewayv1.ParentReference{Name: "front", SectionName: section("api")}, "v2.api.example.com"),
		route("elsewhere", gatewayv1.ParentReference{Name: "back"}, "back.example.com"),
		route("foreign", gatewayv1.ParentReference{Name: "front", Namespace: &other}, "foreign.example.com"),
		&gatewayv1.GRPCRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "grpc"},
			Spec: gatewayv1.GRPCRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "front"}}},
				Hostnames:       []gatewayv1.Hostname{"grpc.example.com"},
			},
		},
	}
}
