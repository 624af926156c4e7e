package services

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
)

// observation is what one reconcile learned of the world: the Service's
// configuration and placement, what it published last, and each Ready
// member's shard as read. decideCopies says what to write to the shards;
// once written, members holds what each gave, and decide turns it into
// records.
type observation struct {
	key    types.NamespacedName
	names  publish.Names
	cfg    serviceconfig.Config
	joined map[string]*kfedv1alpha1.Cluster
	// placed are the joined clusters the Service is placed in; unknown the
	// names its placement gives that no Cluster has (placement.Select).
	placed  map[string]bool
	unknown []string
	// published is the Service's DNSEndpoint, nil when it has none yet.
	published *extdnsv1alpha1.DNSEndpoint
	// shards are the Ready members' shards as read, in the members' order.
	copies []memberRead
	// members holds, for each placed cluster that is Ready, what its shard
	// gave once written (writeCopies); a placed cluster missing here is
	// not Ready.
	members map[string]memberCopy
	// health is the federation's health checkers' view.
	health publish.Health
	// weights are each cluster's ready replicas of the federated
	// Deployments the Service selects; nil when it selects none.
	weights publish.Weights
	// now is when the world was read; resync how often a hostname ingress
	// is resolved again.
	now    time.Time
	resync time.Duration
}

// memberRead is one Ready member's shard as observe read it.
type memberRead struct {
	member registry.Member
	// cur is the shard the member's cache holds, nil when none; standing
	// how kfed stands to it. err is a read that failed.
	cur      *corev1.Service
	standing copies.Standing
	err      error
	// matches is whether cur is close enough to the Service for kfed to
	// take it over, were it not kfed's (matches).
	matches bool
	// row is the endpoint cur gives, for a shard kfed may write;
	// unresolved says why its hostname ingress did not resolve.
	row        dnsendpoint.Cluster
	unresolved error
}

// memberCopy is what one member's shard gave this reconcile: how it
// stands (publish.Serving, Waiting for an ingress, Unresolved, WriteFailed,
// LeftAlone), for Serving and Unresolved the endpoint observed, and what
// went wrong, if anything, for the Placed condition.
type memberCopy struct {
	outcome publish.Outcome
	row     dnsendpoint.Cluster
	problem *problem
}

// observe reads what the Service's records depend on, and each Ready
// member's shard from its cache, its hostname ingress resolved. It writes
// nothing; the error is for a read of the control plane that failed.
func (c *Controller) observe(ctx context.Context, svc *corev1.Service, cfg serviceconfig.Config) (observation, error) {
	o := observation{
		key:    client.ObjectKeyFromObject(svc),
		names:  publish.NewNames(c.Federation, c.Domain, svc.Namespace, svc.Name),
		cfg:    cfg,
		joined: map[string]*kfedv1alpha1.Cluster{},
		now:    c.Clock.Now(),
		resync: c.Resync,
	}
	var all kfedv1alpha1.ClusterList
	if err := c.Fed.List(ctx, &all); err != nil {
		return o, err
	}
	for i := range all.Items {
		if all.Items[i].DeletionTimestamp == nil {
			o.joined[all.Items[i].Name] = &all.Items[i]
		}
	}
	placed, unknown := cfg.Placement.Select(all.Items)
	o.placed, o.unknown = map[string]bool{}, unknown
	for _, c := range placed {
		o.placed[c.Name] = true
	}

	var err error
	if o.health, err = publish.ReadHealth(ctx, c.Fed, c.Federation, o.now, c.Freshness); err != nil {
		return o, err
	}
	if o.weights, err = c.observeWeights(ctx, svc); err != nil {
		return o, err
	}

	var published extdnsv1alpha1.DNSEndpoint
	switch err := c.Fed.Get(ctx, client.ObjectKeyFromObject(svc), &published); {
	case err == nil:
		o.published = &published
	case !apierrors.IsNotFound(err):
		return o, err
	}

	origin := o.key.String()
	for _, m := range c.Members.Ready() { // one snapshot for the whole reconcile
		r := memberRead{member: m}
		var cur corev1.Service
		switch err := m.Client.Get(ctx, o.key, &cur); {
		case err == nil:
			r.cur = &cur
		case !apierrors.IsNotFound(err):
			r.err = fmt.Errorf("reading shard in %s: %w", m.Name, err)
		}
		r.standing = copies.Classify(r.cur, origin, c.Federation)
		r.matches = r.cur != nil && matches(r.cur, svc)
		if r.cur != nil && r.standing != copies.Conflict && (r.standing != copies.Foreign || r.matches) {
			r.row, r.unresolved = c.readIngress(ctx, m, r.cur)
		}
		o.copies = append(o.copies, r)
	}
	return o, nil
}

// readIngress reads a shard's ingress into its cluster row, resolving a
// hostname ingress (publish.ServiceRow).
func (c *Controller) readIngress(ctx context.Context, m registry.Member, shard *corev1.Service) (dnsendpoint.Cluster, error) {
	return publish.ServiceRow(ctx, c.Resolver, m, shard)
}

// matches reports whether an existing Service that kfed did not create is
// close enough to the federated one to be taken over: a load balancer with
// the same selector and the same ports.
func matches(existing, svc *corev1.Service) bool {
	if existing.Spec.Type != corev1.ServiceTypeLoadBalancer || !maps.Equal(existing.Spec.Selector, svc.Spec.Selector) {
		return false
	}
	key := func(ps []corev1.ServicePort) []string {
		var out []string
		for _, p := range ps {
			out = append(out, string(p.Protocol)+"/"+p.Name+"/"+strconv.Itoa(int(p.Port)))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(existing.Spec.Ports), key(svc.Spec.Ports))
}
