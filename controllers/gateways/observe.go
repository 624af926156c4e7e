package gateways

import (
	"context"
	"fmt"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// listFederated returns the federated objects of kind k in the control plane.
func listFederated(ctx context.Context, fed client.Reader, k kind) ([]client.Object, error) {
	var objs []client.Object
	switch k.(type) {
	case gatewayKind:
		var list gatewayv1.GatewayList
		if err := fed.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing Gateways: %w", err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	case ingressKind:
		var list networkingv1.IngressList
		if err := fed.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing Ingresses: %w", err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	}
	return slices.DeleteFunc(objs, func(o client.Object) bool { return !kfedv1alpha1.IsFederated(o) || o.GetDeletionTimestamp() != nil }), nil
}

// claimsOf are the claims of obj, an object of kind k, on the hostnames
// hosts it serves.
func claimsOf(k kind, obj client.Object, hosts []string) []tenancy.Claim {
	var claims []tenancy.Claim
	for _, h := range hosts {
		claims = append(claims, tenancy.Claim{Hostname: h, Namespace: obj.GetNamespace(), Kind: k.name(), Name: obj.GetName(), Created: obj.GetCreationTimestamp().Time})
	}
	return claims
}

// allClaims gathers the claims of every federated object of kinds.
func allClaims(ctx context.Context, fed client.Reader, kinds []kind) ([]tenancy.Claim, error) {
	var claims []tenancy.Claim
	for _, k := range kinds {
		objs, err := listFederated(ctx, fed, k)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			hs, _, err := k.serves(ctx, fed, o)
			if err != nil {
				return nil, err
			}
			claims = append(claims, claimsOf(k, o, hs)...)
		}
	}
	return claims, nil
}

// judge says which of the hostnames of own, an object's claims, it holds,
// given every federated object's claims; the DNSEndpoint is written in
// kfed's namespace.
func judge(rule tenancy.Hostnames, ten tenancy.Endpoints, namespace string, own, claims []tenancy.Claim) []tenancy.Verdict {
	verdicts := rule.Judge(own, rule.Holders(claims))
	for i := range verdicts {
		// The readers take the DNSEndpoint's names by the tenancy rule of
		// DNSEndpoints in kfed's namespace: a federated Service's name is
		// its namespace's alone.
		if v := &verdicts[i]; v.Reason == "" {
			if err := ten.Check(namespace, v.Hostname); err != nil {
				v.Reason = err.Error()
			}
		}
	}
	return verdicts
}

// claimsMayChange passes the events after which an object's claims may
// differ: creation, deletion, a new generation (spec), opting in or out,
// deletion starting. Status writes (kfed's own among them) pass not, so
// that reconciling every object for each of them does not go round.
var claimsMayChange = builder.WithPredicates(predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() || kfedv1alpha1.IsFederated(o) != kfedv1alpha1.IsFederated(n) ||
			(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
	},
})

// resolve looks up a copy's hostname address, as the Service controller
// does a load balancer's name: again every sync, the name kept for the
// providers that publish an alias to it.
func resolve(ctx context.Context, resolver publish.Resolver, cluster string, mc memberCopy) memberCopy {
	name, addrs, err := publish.ResolveHostname(ctx, resolver, mc.hostname)
	mc.hostname = name
	if err != nil {
		mc.outcome = publish.Unresolved
		mc.problem = fmt.Sprintf("resolving the address %s of cluster %s: %v", name, cluster, err)
		return mc
	}
	mc.addrs = append(mc.addrs, addrs...)
	return mc
}
