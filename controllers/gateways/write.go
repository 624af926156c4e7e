package gateways

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

// writeCopies brings obj's copies, of kind k, in every Ready member in
// line: written where the object is placed (kind.sync, which reads back
// each copy's addresses, a hostname address resolved by resolver),
// removed where it is not. ready is one snapshot of the Ready members for
// the whole reconcile. What each gave goes to o.members, for decide; the
// error joins the member writes to retry with backoff.
func writeCopies(ctx context.Context, ready []registry.Member, k kind, federation string, resolver publish.Resolver, obj client.Object, o *observation) error {
	var errs []error
	for _, m := range ready {
		if _, ok := o.placed[m.Name]; !ok {
			errs = append(errs, k.remove(ctx, m, client.ObjectKeyFromObject(obj), federation))
			continue
		}
		mc, err := k.sync(ctx, m, obj, federation)
		errs = append(errs, err)
		if mc.outcome == publish.Serving && mc.hostname != "" {
			mc = resolve(ctx, resolver, m.Name, mc)
		}
		o.members[m.Name] = mc
	}
	return errors.Join(errs...)
}

// removeCopies deletes the copies of key, of kind k, kfed made in the
// Ready members.
func removeCopies(ctx context.Context, ready []registry.Member, k kind, key types.NamespacedName, federation string) error {
	var errs []error
	for _, m := range ready {
		errs = append(errs, k.remove(ctx, m, key, federation))
	}
	return errors.Join(errs...)
}
