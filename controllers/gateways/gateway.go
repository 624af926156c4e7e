package gateways

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

// gatewayKind federates Gateways with the routes of their namespace that
// attach to them.
type gatewayKind struct {
	// fed reads the control plane's routes; routes are the route kinds it
	// serves.
	fed    client.Reader
	routes []routeKind
}

func (gatewayKind) name() string             { return "Gateway" }
func (gatewayKind) newObject() client.Object { return &gatewayv1.Gateway{} }
func (gatewayKind) finalizer() string        { return kfedv1alpha1.FinalizerGateway }

// attached lists the routes (every kind served) of gw's namespace whose
// parentRefs name gw. Routes of other namespaces are not federated with it:
// their hostnames would be claimed for the Gateway's namespace.
func (k gatewayKind) attached(ctx context.Context, r client.Reader, gw *gatewayv1.Gateway) ([]client.Object, error) {
	var out []client.Object
	for _, rk := range k.routes {
		routes, err := listRoutes(ctx, r, rk, gw.Namespace)
		if err != nil {
			return nil, err
		}
		for _, rt := range routes {
			if len(parentRefs(rt, gw.Namespace, gw.Name)) > 0 {
				out = append(out, rt)
			}
		}
	}
	return out, nil
}

// parentRefs are the parentRefs of the route rt that name the Gateway
// namespace/name.
func parentRefs(rt client.Object, namespace, name string) []gatewayv1.ParentReference {
	var out []gatewayv1.ParentReference
	refs, _ := routeSpec(rt)
	for _, p := range refs {
		group, kind, ns := gatewayv1.GroupName, "Gateway", rt.GetNamespace()
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
	routes, err := k.attached(ctx, fed, gw)
	if err != nil {
		return nil, nil, err
	}
	hosts, ports := hostnamesOf(gw, routes)
	return hosts, ports, nil
}

// backends are the attached routes' backends.
func (k gatewayKind) backends(ctx context.Context, fed client.Reader, obj client.Object) ([]string, error) {
	routes, err := k.attached(ctx, fed, obj.(*gatewayv1.Gateway))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, rt := range routes {
		names = append(names, routeBackends(rt)...)
	}
	return names, nil
}

// hostnamesOf is serves without the reads.
func hostnamesOf(gw *gatewayv1.Gateway, routes []client.Object) ([]string, []int32) {
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
	for _, rt := range routes {
		_, names := routeSpec(rt)
		for _, p := range parentRefs(rt, gw.Namespace, gw.Name) {
			if (p.SectionName == nil && len(open) > 0) || (p.SectionName != nil && open[string(*p.SectionName)]) {
				for _, h := range names {
					hosts = append(hosts, string(h))
				}
			}
		}
	}
	slices.Sort(ports)
	return hosts, ports
}

func (k gatewayKind) sync(ctx context.Context, m registry.Member, obj client.Object, federation string) (memberCopy, error) {
	gw := obj.(*gatewayv1.Gateway)
	if !m.Watches(&gatewayv1.Gateway{}) {
		msg := fmt.Sprintf("cluster %s does not serve Gateways (install the Gateway API CRDs there, and let kfed read them)", m.Name)
		return memberCopy{outcome: publish.WriteFailed, problem: msg}, errors.New(msg)
	}
	want := &gatewayv1.Gateway{ObjectMeta: copyMeta(gw), Spec: *gw.Spec.DeepCopy()}
	copies.Mark(want, origin(gw), federation)
	var cur gatewayv1.Gateway
	existing, err := getCopy(ctx, m, client.ObjectKeyFromObject(want), &cur)
	if err != nil {
		return memberCopy{outcome: publish.WriteFailed, problem: err.Error()}, err
	}
	if c, ok := conflict(m, existing, origin(gw), federation, k.name()); !ok {
		return c, nil
	}
	if _, err := copies.WriteCopy(ctx, m, existing, want); err != nil {
		return memberCopy{outcome: publish.WriteFailed, problem: err.Error()}, err
	}
	if err := k.syncRoutes(ctx, m, gw, federation); err != nil {
		return memberCopy{outcome: publish.WriteFailed, problem: err.Error()}, err
	}
	if existing == nil {
		return memberCopy{outcome: publish.Waiting}, nil
	}
	return addressesOf(cur.Status.Addresses), nil
}

// addressesOf reads a Gateway copy's addresses: IPAddress ones, and the
// first Hostname one (a load balancer's name, resolved by observe). Other
// types are the implementation's own and say nothing DNS can publish.
func addressesOf(status []gatewayv1.GatewayStatusAddress) memberCopy {
	var mc memberCopy
	for _, a := range status {
		switch {
		case a.Type == nil || *a.Type == gatewayv1.IPAddressType:
			if ip, err := netip.ParseAddr(a.Value); err == nil {
				mc.addrs = append(mc.addrs, ip.Unmap())
			}
		case *a.Type == gatewayv1.HostnameAddressType && mc.hostname == "":
			mc.hostname = a.Value
		}
	}
	if len(mc.addrs) == 0 && mc.hostname == "" {
		mc.outcome = publish.Waiting
	}
	return mc
}

// syncRoutes copies the routes attached to gw into m, and deletes the
// copies kfed made of routes that attach to it no longer.
func (k gatewayKind) syncRoutes(ctx context.Context, m registry.Member, gw *gatewayv1.Gateway, federation string) error {
	routes, err := k.attached(ctx, k.fed, gw)
	if err != nil {
		return err
	}
	var errs []error
	keep := map[string]bool{}
	for _, rt := range routes {
		kind := routeKindName(rt)
		want := routeCopy(rt)
		keep[kind+" "+rt.GetName()] = true
		if !m.Watches(want) {
			errs = append(errs, fmt.Errorf("cluster %s does not serve %ss (install the Gateway API CRDs there, and let kfed read them)", m.Name, kind))
			continue
		}
		copies.Mark(want, origin(rt), federation)
		cur := want.DeepCopyObject().(client.Object)
		existing, err := getCopy(ctx, m, client.ObjectKeyFromObject(want), cur)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c, ok := conflict(m, existing, origin(rt), federation, kind); !ok {
			errs = append(errs, errors.New(c.problem))
			continue
		}
		if _, err := copies.WriteCopy(ctx, m, existing, want); err != nil {
			errs = append(errs, fmt.Errorf("the %s %s: %w", kind, origin(rt), err))
		}
	}
	errs = append(errs, k.removeRoutes(ctx, m, gw.Namespace, gw.Name, federation, keep))
	return errors.Join(errs...)
}

// removeRoutes deletes the route copies kfed made in m that attach to the
// Gateway namespace/name, except those in keep ("Kind name").
func (gatewayKind) removeRoutes(ctx context.Context, m registry.Member, namespace, name, federation string, keep map[string]bool) error {
	var errs []error
	for _, rk := range routeKinds {
		if !m.Watches(rk.newObj()) {
			continue
		}
		routes, err := listRoutes(ctx, m.Client, rk, namespace, client.MatchingLabels{kfedv1alpha1.LabelFederation: federation})
		if err != nil {
			errs = append(errs, fmt.Errorf("in %s: %w", m.Name, err))
			continue
		}
		for _, rt := range routes {
			if keep[rk.name+" "+rt.GetName()] || len(parentRefs(rt, namespace, name)) == 0 || attachedElsewhere(ctx, m, rt, name, federation) {
				continue
			}
			errs = append(errs, removeCopy(ctx, m, client.ObjectKeyFromObject(rt), rk.newObj(), federation, rk.name))
		}
	}
	return errors.Join(errs...)
}

// attachedElsewhere reports whether the route copy rt also attaches to a
// Gateway other than name that kfed federates into m: that Gateway's
// reconcile keeps it there, and deleting it here would only make the two
// take turns.
func attachedElsewhere(ctx context.Context, m registry.Member, rt client.Object, name, federation string) bool {
	for _, p := range parentsOf(ctx, rt) {
		if p.Name == name {
			continue
		}
		var gw gatewayv1.Gateway
		if err := m.Client.Get(ctx, p.NamespacedName, &gw); err == nil && copies.Classify(&gw, p.String(), federation) == copies.Ours {
			return true
		}
	}
	return false
}

func (k gatewayKind) remove(ctx context.Context, m registry.Member, key types.NamespacedName, federation string) error {
	return errors.Join(
		k.removeRoutes(ctx, m, key.Namespace, key.Name, federation, nil),
		removeCopy(ctx, m, key, &gatewayv1.Gateway{}, federation, k.name()))
}

func (gatewayKind) setStatus(obj client.Object, addrs []netip.Addr, hostnames []string, conds []metav1.Condition) bool {
	gw := obj.(*gatewayv1.Gateway)
	gw.Status.Addresses = nil
	for _, a := range addrs {
		gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{Type: ptr(gatewayv1.IPAddressType), Value: a.String()})
	}
	for _, h := range hostnames {
		gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{Type: ptr(gatewayv1.HostnameAddressType), Value: h})
	}
	// A Gateway's status holds at most eight conditions, two of them the
	// Gateway API's own: the per-provider ones are folded into one.
	folded := publish.FoldProgrammed(conds)
	for _, c := range slices.Clone(gw.Status.Conditions) {
		if strings.HasPrefix(c.Type, kfedv1alpha1.ConditionProgrammedPrefix) ||
			c.Type == kfedv1alpha1.ConditionDNSProgrammed && meta.FindStatusCondition(folded, c.Type) == nil {
			meta.RemoveStatusCondition(&gw.Status.Conditions, c.Type)
		}
	}
	for _, c := range folded {
		meta.SetStatusCondition(&gw.Status.Conditions, c)
	}
	return false
}

func (gatewayKind) conditions(obj client.Object) []metav1.Condition {
	return obj.(*gatewayv1.Gateway).Status.Conditions
}

func ptr[T any](v T) *T { return &v }
