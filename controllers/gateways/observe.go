package gateways

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// observe reads what the object's records depend on from the control
// plane. It writes nothing: writeCopies then syncs the copies in the
// members. The error is for a read that failed.
func (r *reconciler) observe(ctx context.Context, obj client.Object, cfg serviceconfig.Config) (o observation, err error) {
	o = observation{placed: map[string]*kfedv1alpha1.Cluster{}, members: map[string]memberCopy{}, ttl: cfg.TTL, probes: cfg.Health,
		now: r.Clock.Now(), resync: r.Resync}
	var all kfedv1alpha1.ClusterList
	if err := r.Fed.List(ctx, &all); err != nil {
		return o, fmt.Errorf("listing Clusters: %w", err)
	}
	placed, unknown := cfg.Placement.Select(all.Items)
	for _, cl := range placed {
		o.placed[cl.Name] = cl
	}
	o.unknown = unknown

	hosts, ports, err := r.k.serves(ctx, r.Fed, obj)
	if err != nil {
		return o, err
	}
	o.ports = ports
	if o.verdicts, err = r.judge(ctx, obj, hosts); err != nil {
		return o, err
	}
	if o.weights, err = r.observeWeights(ctx, obj); err != nil {
		return o, err
	}

	var published extdnsv1alpha1.DNSEndpoint
	o.key = r.endpointKey(client.ObjectKeyFromObject(obj))
	switch err := r.Fed.Get(ctx, o.key, &published); {
	case err == nil:
		o.endpoint = &published
	case !apierrors.IsNotFound(err):
		return o, err
	}
	if o.health, err = publish.ReadHealth(ctx, r.Fed, r.Federation, o.now, r.Freshness); err != nil {
		return o, err
	}
	return o, nil
}

// resolve looks up a copy's hostname address, as the Service controller
// does a load balancer's name: again every sync, the name kept for the
// providers that publish an alias to it.
func (r *reconciler) resolve(ctx context.Context, cluster string, mc memberCopy) memberCopy {
	name, addrs, err := publish.ResolveHostname(ctx, r.Resolver, mc.hostname)
	mc.hostname = name
	if err != nil {
		mc.outcome = publish.Unresolved
		mc.problem = fmt.Sprintf("resolving the address %s of cluster %s: %v", name, cluster, err)
		return mc
	}
	mc.addrs = append(mc.addrs, addrs...)
	return mc
}

// judge gathers every federated object's claims and says which of obj's
// hostnames it holds.
func (r *reconciler) judge(ctx context.Context, obj client.Object, hosts []string) ([]tenancy.Verdict, error) {
	var claims, own []tenancy.Claim
	for _, k := range r.kinds() {
		objs, err := r.list(ctx, k)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			hs, _, err := k.serves(ctx, r.Fed, o)
			if err != nil {
				return nil, err
			}
			for _, h := range hs {
				claims = append(claims, tenancy.Claim{Hostname: h, Namespace: o.GetNamespace(), Kind: k.name(), Name: o.GetName(), Created: o.GetCreationTimestamp().Time})
			}
		}
	}
	for _, h := range hosts {
		own = append(own, tenancy.Claim{Hostname: h, Namespace: obj.GetNamespace(), Kind: r.k.name(), Name: obj.GetName(), Created: obj.GetCreationTimestamp().Time})
	}
	verdicts := r.Rule.Judge(own, r.Rule.Holders(claims))
	for i := range verdicts {
		// The readers take the DNSEndpoint's names by the tenancy rule of
		// DNSEndpoints in kfed's namespace: a federated Service's name is
		// its namespace's alone.
		if v := &verdicts[i]; v.Reason == "" {
			if err := r.Tenancy.Check(r.Namespace, v.Hostname); err != nil {
				v.Reason = err.Error()
			}
		}
	}
	return verdicts, nil
}
