package gateways

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
)

// GatewayFinalizer holds a federated Gateway until its copies, its routes'
// copies and its records are gone.
const GatewayFinalizer = "kfed.io/gateway-cleanup"

// gatewayKind federates Gateways with the HTTPRoutes of their namespace
// that attach to them.
type gatewayKind struct {
	// fed reads the control plane's routes.
	fed client.Reader
}

func (gatewayKind) name() string             { return "Gateway" }
func (gatewayKind) newObject() client.Object { return &gatewayv1.Gateway{} }
func (gatewayKind) finalizer() string        { return GatewayFinalizer }

// attached lists the HTTPRoutes of gw's namespace whose parentRefs name gw.
// Routes of other namespaces are not federated with it: their hostnames
// would be claimed for the Gateway's namespace.
func attached(ctx context.Context, r client.Reader, gw *gatewayv1.Gateway) ([]gatewayv1.HTTPRoute, error) {
	var list gatewayv1.HTTPRouteList
	if err := r.List(ctx, &list, client.InNamespace(gw.Namespace)); err != nil {
		return nil, fmt.Errorf("listing HTTPRoutes of %s: %w", gw.Namespace, err)
	}
	var out []gatewayv1.HTTPRoute
	for _, rt := range list.Items {
		if len(parentRefs(&rt, gw.Namespace, gw.Name)) > 0 {
			out = append(out, rt)
		}
	}
	return out, nil
}

// parentRefs are the parentRefs of rt that name the Gateway namespace/name.
func parentRefs(rt *gatewayv1.HTTPRoute, namespace, name string) []gatewayv1.ParentReference {
	var out []gatewayv1.ParentReference
	for _, p := range rt.Spec.ParentRefs {
		group, kind, ns := gatewayv1.GroupName, "Gateway", rt.Namespace
		if p.Group != nil {
			group = string(*p.Group)
		}
		if p.Kind != nil {
			kind = string(*p.Kind)
		}
		if p.Namespace != nil {
			ns = string(*p.Namespace)
		}
		if group == gatewayv1.GroupName && kind == "Gateway" && ns == namespace && string(p.Name) == name {
			out = append(out, p)
		}
	}
	return out
}

// serves reads the listeners' hostnames, and the attached routes'
// hostnames where the listener they attach to has none; the ports are the
// listeners'.
func (k gatewayKind) serves(ctx context.Context, fed client.Reader, obj client.Object) ([]string, []int32, error) {
	gw := obj.(*gatewayv1.Gateway)
	routes, err := attached(ctx, fed, gw)
	if err != nil {
		return nil, nil, err
	}
	hosts, ports := hostnamesOf(gw, routes)
	return hosts, ports, nil
}

// hostnamesOf is serves without the reads.
func hostnamesOf(gw *gatewayv1.Gateway, routes []gatewayv1.HTTPRoute) ([]string, []int32) {
	var hosts []string
	var ports []int32
	open := map[string]bool{} // listeners without a hostname, by name
	for _, l := range gw.Spec.Listeners {
		if !slices.Contains(ports, int32(l.Port)) {
			ports = append(ports, int32(l.Port))
		}
		if l.Hostname != nil && *l.Hostname != "" {
			hosts = append(hosts, string(*l.Hostname))
		} else {
			open[string(l.Name)] = true
		}
	}
	for i := range routes {
		for _, p := range parentRefs(&routes[i], gw.Namespace, gw.Name) {
			if (p.SectionName == nil && len(open) > 0) || (p.SectionName != nil && open[string(*p.SectionName)]) {
				for _, h := range routes[i].Spec.Hostnames {
					hosts = append(hosts, string(h))
				}
			}
		}
	}
	slices.Sort(ports)
	return hosts, ports
}

func (k gatewayKind) sync(ctx context.Context, m clusters.Member, obj client.Object, federation string) (memberCopy, error) {
	gw := obj.(*gatewayv1.Gateway)
	if !m.Watches(&gatewayv1.Gateway{}) {
		msg := fmt.Sprintf("cluster %s does not serve Gateways (install the Gateway API CRDs there, and let kfed read them)", m.Name)
		return memberCopy{outcome: copyFailed, problem: msg}, errors.New(msg)
	}
	want := &gatewayv1.Gateway{ObjectMeta: copyMeta(gw), Spec: *gw.Spec.DeepCopy()}
	clusters.Mark(want, origin(gw), federation)
	var cur gatewayv1.Gateway
	existing, err := getCopy(ctx, m, client.ObjectKeyFromObject(want), &cur)
	if err != nil {
		return memberCopy{outcome: copyFailed, problem: err.Error()}, err
	}
	if c, ok := conflict(m, existing, origin(gw), federation, k.name()); !ok {
		return c, nil
	}
	if existing == nil {
		if err := createCopy(ctx, m, want); err != nil {
			return memberCopy{outcome: copyFailed, problem: err.Error()}, err
		}
	} else if !equality.Semantic.DeepEqual(cur.Spec, want.Spec) || mergeMeta(&cur.ObjectMeta, want.ObjectMeta) {
		cur.Spec = want.Spec
		if err := m.Client.Update(ctx, &cur); err != nil {
			err = fmt.Errorf("updating the Gateway in %s: %w", m.Name, err)
			return memberCopy{outcome: copyFailed, problem: err.Error()}, err
		}
	}
	if err := k.syncRoutes(ctx, m, gw, federation); err != nil {
		return memberCopy{outcome: copyFailed, problem: err.Error()}, err
	}
	if existing == nil {
		return memberCopy{outcome: copyWaiting}, nil
	}
	var addrs []netip.Addr
	for _, a := range cur.Status.Addresses {
		if a.Type != nil && *a.Type != gatewayv1.IPAddressType {
			continue // a hostname address is not published (yet)
		}
		if ip, err := netip.ParseAddr(a.Value); err == nil {
			addrs = append(addrs, ip.Unmap())
		}
	}
	if len(addrs) == 0 {
		return memberCopy{outcome: copyWaiting}, nil
	}
	return memberCopy{outcome: copyServing, addrs: addrs}, nil
}

// syncRoutes copies the routes attached to gw into m, and deletes the
// copies kfed made of routes that attach to it no longer.
func (k gatewayKind) syncRoutes(ctx context.Context, m clusters.Member, gw *gatewayv1.Gateway, federation string) error {
	routes, err := attached(ctx, k.fed, gw)
	if err != nil {
		return err
	}
	var errs []error
	keep := map[string]bool{}
	for i := range routes {
		rt := &routes[i]
		keep[rt.Name] = true
		want := &gatewayv1.HTTPRoute{ObjectMeta: copyMeta(rt), Spec: *rt.Spec.DeepCopy()}
		clusters.Mark(want, origin(rt), federation)
		var cur gatewayv1.HTTPRoute
		existing, err := getCopy(ctx, m, client.ObjectKeyFromObject(want), &cur)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c, ok := conflict(m, existing, origin(rt), federation, "HTTPRoute"); !ok {
			errs = append(errs, errors.New(c.problem))
			continue
		}
		if existing == nil {
			errs = append(errs, createCopy(ctx, m, want))
			continue
		}
		if !equality.Semantic.DeepEqual(cur.Spec, want.Spec) || mergeMeta(&cur.ObjectMeta, want.ObjectMeta) {
			cur.Spec = want.Spec
			if err := m.Client.Update(ctx, &cur); err != nil {
				errs = append(errs, fmt.Errorf("updating the HTTPRoute %s in %s: %w", origin(rt), m.Name, err))
			}
		}
	}
	errs = append(errs, k.removeRoutes(ctx, m, gw.Namespace, gw.Name, federation, keep))
	return errors.Join(errs...)
}

// removeRoutes deletes the route copies kfed made in m that attach to the
// Gateway namespace/name, except those named in keep.
func (gatewayKind) removeRoutes(ctx context.Context, m clusters.Member, namespace, name, federation string, keep map[string]bool) error {
	if !m.Watches(&gatewayv1.HTTPRoute{}) {
		return nil
	}
	var list gatewayv1.HTTPRouteList
	if err := m.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{kfedv1alpha1.LabelFederation: federation}); err != nil {
		return fmt.Errorf("listing HTTPRoutes in %s: %w", m.Name, err)
	}
	var errs []error
	for i := range list.Items {
		rt := &list.Items[i]
		if keep[rt.Name] || len(parentRefs(rt, namespace, name)) == 0 || attachedElsewhere(ctx, m, rt, name, federation) {
			continue
		}
		key := client.ObjectKeyFromObject(rt)
		errs = append(errs, removeCopy(ctx, m, key, &gatewayv1.HTTPRoute{}, federation, "HTTPRoute"))
	}
	return errors.Join(errs...)
}

// attachedElsewhere reports whether the route copy rt also attaches to a
// Gateway other than name that kfed federates into m: that Gateway's
// reconcile keeps it there, and deleting it here would only make the two
// take turns.
func attachedElsewhere(ctx context.Context, m clusters.Member, rt *gatewayv1.HTTPRoute, name, federation string) bool {
	for _, p := range parentsOf(ctx, rt) {
		if p.Name == name {
			continue
		}
		var gw gatewayv1.Gateway
		if err := m.Client.Get(ctx, p.NamespacedName, &gw); err == nil && clusters.Classify(&gw, p.String(), federation) == clusters.Ours {
			return true
		}
	}
	return false
}

func (k gatewayKind) remove(ctx context.Context, m clusters.Member, key types.NamespacedName, federation string) error {
	return errors.Join(
		k.removeRoutes(ctx, m, key.Namespace, key.Name, federation, nil),
		removeCopy(ctx, m, key, &gatewayv1.Gateway{}, federation, k.name()))
}

func (gatewayKind) setStatus(obj client.Object, addrs []netip.Addr, conds []metav1.Condition) bool {
	gw := obj.(*gatewayv1.Gateway)
	gw.Status.Addresses = nil
	for _, a := range addrs {
		gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{Type: ptr(gatewayv1.IPAddressType), Value: a.String()})
	}
	for _, c := range conds {
		meta.SetStatusCondition(&gw.Status.Conditions, c)
	}
	return false
}

func (gatewayKind) conditions(obj client.Object) []metav1.Condition {
	return obj.(*gatewayv1.Gateway).Status.Conditions
}

func ptr[T any](v T) *T { return &v }
