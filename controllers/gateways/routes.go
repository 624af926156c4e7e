package gateways

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// routeKind is a kind of route federated with the Gateways it attaches to.
type routeKind struct {
	name    string
	newObj  func() client.Object
	newList func() client.ObjectList
}

// routeKinds are the route kinds kfed federates: the standard channel's
// HTTP and gRPC routes, which carry hostnames.
var routeKinds = []routeKind{
	{"HTTPRoute", func() client.Object { return &gatewayv1.HTTPRoute{} }, func() client.ObjectList { return &gatewayv1.HTTPRouteList{} }},
	{"GRPCRoute", func() client.Object { return &gatewayv1.GRPCRoute{} }, func() client.ObjectList { return &gatewayv1.GRPCRouteList{} }},
}

// servedRoutes are the route kinds the control plane serves, asked of its
// REST mapper.
func servedRoutes(mapper meta.RESTMapper) []routeKind {
	var out []routeKind
	for _, k := range routeKinds {
		if _, err := mapper.RESTMapping(schema.GroupKind{Group: gatewayv1.GroupName, Kind: k.name}, gatewayv1.GroupVersion.Version); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// routeSpec is what kfed reads of a route of any kind.
func routeSpec(obj client.Object) (parents []gatewayv1.ParentReference, hosts []gatewayv1.Hostname) {
	switch r := obj.(type) {
	case *gatewayv1.HTTPRoute:
		return r.Spec.ParentRefs, r.Spec.Hostnames
	case *gatewayv1.GRPCRoute:
		return r.Spec.ParentRefs, r.Spec.Hostnames
	}
	return nil, nil
}

// parentsOf answers the Gateways of its namespace a route attaches to.
func parentsOf(_ context.Context, obj client.Object) []ctrl.Request {
	refs, _ := routeSpec(obj)
	var reqs []ctrl.Request
	for _, p := range refs {
		if (p.Kind == nil || *p.Kind == "Gateway") && (p.Namespace == nil || string(*p.Namespace) == obj.GetNamespace()) {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: string(p.Name)}})
		}
	}
	return reqs
}

// routeKindName is the Kind of a route object (typed objects read from a
// client carry no TypeMeta).
func routeKindName(obj client.Object) string {
	switch obj.(type) {
	case *gatewayv1.HTTPRoute:
		return "HTTPRoute"
	case *gatewayv1.GRPCRoute:
		return "GRPCRoute"
	}
	return fmt.Sprintf("%T", obj)
}

// routeCopy is the member copy of a route: its metadata less kfed's
// annotations, and its spec.
func routeCopy(obj client.Object) client.Object {
	switch r := obj.(type) {
	case *gatewayv1.HTTPRoute:
		return &gatewayv1.HTTPRoute{ObjectMeta: copyMeta(r), Spec: *r.Spec.DeepCopy()}
	case *gatewayv1.GRPCRoute:
		return &gatewayv1.GRPCRoute{ObjectMeta: copyMeta(r), Spec: *r.Spec.DeepCopy()}
	}
	panic(fmt.Sprintf("gateways: %T is no route kind", obj))
}

// listRoutes lists the routes of kind k in namespace, with opts.
func listRoutes(ctx context.Context, r client.Reader, k routeKind, namespace string, opts ...client.ListOption) ([]client.Object, error) {
	list := k.newList()
	if err := r.List(ctx, list, append(opts, client.InNamespace(namespace))...); err != nil {
		return nil, fmt.Errorf("listing %ss of %s: %w", k.name, namespace, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		out = append(out, it.(client.Object))
	}
	return out, nil
}
