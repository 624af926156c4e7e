package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/publish"
	"github.com/kfed-io/kfed/services/serviceconfig"
)

// observation is what one reconcile learned of the world: the Service's
// configuration and placement, what it published last, and what syncing its
// shard found in each Ready member. decide turns it into records.
type observation struct {
	key    types.NamespacedName
	names  publish.Names
	cfg    serviceconfig.Config
	joined map[string]*kfedv1alpha1.Cluster
	// placed are the joined clusters the Service is placed in; unknown the
	// names its placement gives that are not joined.
	placed  map[string]bool
	unknown []string
	// published is the Service's DNSEndpoint, nil when it has none yet.
	published *extdnsv1alpha1.DNSEndpoint
	// members holds, for each placed cluster that is Ready, what its shard
	// gave; a placed cluster missing here is not Ready.
	members map[string]memberShard
	// shardErrs are the shard writes that failed, to be retried.
	shardErrs error
	// health is the federation's health checkers' view.
	health publish.Health
	// weights are each cluster's ready replicas of the federated
	// Deployments the Service selects; nil when it selects none.
	weights publish.Weights
	// now is when the world was read.
	now time.Time
}

// memberShard is what one member's shard gave this reconcile: how it
// stands (publish.Serving, Waiting for an ingress, Unresolved, WriteFailed,
// LeftAlone) and, for Serving and Unresolved, the endpoint observed.
type memberShard struct {
	outcome publish.Outcome
	shard   dnsendpoint.Cluster
}

// observe reads what the Service's records depend on and syncs its shards:
// each placed, Ready member gets its shard created, updated or adopted, and
// members it is no longer placed in lose the one kfed made. Problems with
// single members go to st and o.shardErrs and leave the others alone; the
// error is for a read of the control plane that failed.
func (c *Controller) observe(ctx context.Context, svc *corev1.Service, cfg serviceconfig.Config, st *status) (observation, error) {
	o := observation{
		key:     client.ObjectKeyFromObject(svc),
		names:   publish.NewNames(c.Federation, c.Domain, svc.Namespace, svc.Name),
		cfg:     cfg,
		joined:  map[string]*kfedv1alpha1.Cluster{},
		members: map[string]memberShard{},
		now:     c.Clock.Now(),
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
	o.placed, o.unknown = place(cfg, o.joined)

	var err error
	if o.health, err = publish.ReadHealth(ctx, c.Fed, c.namespace(), c.Federation, o.now, c.Freshness); err != nil {
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

	var errs []error
	for _, m := range c.Members.Ready() { // one snapshot for the whole reconcile
		if !o.placed[m.Name] {
			if err := c.deleteShard(ctx, m, client.ObjectKeyFromObject(svc)); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		ms, err := c.syncShard(ctx, m, svc, st)
		if err != nil {
			errs = append(errs, err)
		}
		o.members[m.Name] = ms
	}
	o.shardErrs = errors.Join(errs...)
	return o, nil
}

// syncShard brings the shard in member m in line and reads its endpoint.
func (c *Controller) syncShard(ctx context.Context, m clusters.Member, svc *corev1.Service, st *status) (memberShard, error) {
	shard, err := c.ensureShard(ctx, m, svc, st)
	if err != nil {
		return memberShard{outcome: publish.WriteFailed}, err
	}
	if shard == nil {
		return memberShard{outcome: publish.LeftAlone}, nil
	}
	obs, err := c.readIngress(ctx, m, shard)
	if err != nil {
		st.shardProblem(m.Name, reasonIngressUnresolved, err.Error())
		return memberShard{outcome: publish.Unresolved, shard: obs}, nil
	}
	if len(obs.Addresses) == 0 && obs.Hostname == "" {
		return memberShard{outcome: publish.Waiting}, nil
	}
	return memberShard{outcome: publish.Serving, shard: obs}, nil
}

// ensureShard creates, updates or adopts the shard of svc in member m. It
// returns nil with no error when a conflicting Service is in the way.
func (c *Controller) ensureShard(ctx context.Context, m clusters.Member, svc *corev1.Service, st *status) (*corev1.Service, error) {
	origin := svc.Namespace + "/" + svc.Name
	want := desiredShard(svc, c.Federation)
	var cur corev1.Service
	err := m.Client.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading shard in %s: %w", m.Name, err)
	}
	existing := &cur
	if apierrors.IsNotFound(err) {
		existing = nil
	}
	switch clusters.Classify(existing, origin, c.Federation) {
	case clusters.Absent:
		if err := c.writeShard(ctx, m, nil, want, st); err != nil {
			return nil, err
		}
		c.Metrics.shard(m.Name, "create")
		c.clusterEvent(svc, m.Name, corev1.EventTypeNormal, "ShardCreated", "created shard in cluster %s", m.Name)
		return want, nil
	case clusters.Conflict:
		st.shardProblem(m.Name, reasonShardConflict, fmt.Sprintf("cluster %s has a Service %s that another federation or Service manages; left alone", m.Name, origin))
		return nil, nil
	case clusters.Foreign:
		if !matches(existing, svc) {
			st.shardProblem(m.Name, reasonShardConflict, fmt.Sprintf("cluster %s already has a Service %s that kfed did not create and that differs (type, selector or ports); left alone", m.Name, origin))
			return nil, nil
		}
		want.Annotations[AnnotationAdopted] = "true"
		c.Metrics.shard(m.Name, "adopt")
		c.clusterEvent(svc, m.Name, corev1.EventTypeNormal, "ShardAdopted", "adopted the matching Service already in cluster %s", m.Name)
	case clusters.Adopted:
		want.Annotations[AnnotationAdopted] = "true"
	}
	if err := c.writeShard(ctx, m, existing, want, st); err != nil {
		return nil, err
	}
	return existing, nil
}

// writeShard writes want, the shard, to member m (clusters.WriteCopy); cur
// is the shard the cache holds, nil when none.
func (c *Controller) writeShard(ctx context.Context, m clusters.Member, cur, want *corev1.Service, st *status) error {
	var curObj client.Object
	if cur != nil {
		curObj = cur
	}
	changed, err := clusters.WriteCopy(ctx, m, curObj, want)
	if errors.Is(err, clusters.ErrNotCached) {
		return err
	}
	if err != nil {
		what := "shard"
		if cur != nil {
			what = "shard update"
		}
		// WriteCopy names the cluster and the object; the condition says
		// them its own way.
		reason := cmp.Or(errors.Unwrap(err), err)
		st.shardProblem(m.Name, reasonShardRejected, fmt.Sprintf("cluster %s rejected the %s: %v", m.Name, what, reason))
		return err
	}
	if changed && cur != nil {
		c.Metrics.shard(m.Name, "update")
	}
	return nil
}

// readIngress reads a shard's ingress into its cluster row, resolving a hostname
// ingress.
func (c *Controller) readIngress(ctx context.Context, m clusters.Member, shard *corev1.Service) (dnsendpoint.Cluster, error) {
	s := dnsendpoint.Cluster{Name: m.Name, Region: m.Region, Zones: m.Zones, Weight: 1}
	for _, ip := range shard.Spec.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			s.ClusterIPs = append(s.ClusterIPs, a)
		}
	}
	for _, p := range shard.Spec.Ports {
		s.Ports = append(s.Ports, dnsendpoint.Port{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
	}
	var errs []error
	for _, ing := range shard.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(ing.IP); err == nil {
			s.Addresses = append(s.Addresses, a)
			continue
		}
		if ing.Hostname != "" && s.Hostname == "" {
			var addrs []netip.Addr
			var err error
			s.Hostname, addrs, err = publish.ResolveHostname(ctx, c.Resolver, ing.Hostname)
			if err != nil {
				errs = append(errs, fmt.Errorf("resolving ingress hostname %s of cluster %s: %w", s.Hostname, m.Name, err))
				continue
			}
			s.Addresses = append(s.Addresses, addrs...)
		}
	}
	return s, errors.Join(errs...)
}
