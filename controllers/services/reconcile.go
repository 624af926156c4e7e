package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

// SetupWithManager registers the controller: it watches federated Services
// and their DNSEndpoints in the control plane, the federated Deployments
// whose ready replicas weigh them, shards in every member, and the set of
// Ready members.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	var err error
	if c.shards, err = registry.NewChannel[client.Object](mgr); err != nil {
		return err
	}
	if c.health, err = registry.NewChannel[client.Object](mgr); err != nil {
		return err
	}
	hw := &publish.HealthWatch{
		Cache: mgr.GetCache(), Federation: c.Federation, Freshness: c.Freshness, Clock: c.Clock,
		// A Service's DNSEndpoint has its key.
		Enqueue: func(key types.NamespacedName) { c.health.Send(registry.Stub(newService, key)) },
		All: func(ctx context.Context) {
			for _, r := range c.allFederated(ctx, nil) {
				c.health.Send(registry.Stub(newService, r.NamespacedName))
			}
		},
	}
	if err := mgr.Add(hw); err != nil {
		return err
	}
	c.Members.Watch(&corev1.Service{}, copies.ToOrigin(c.shards, c.Federation, newService))
	c.Members.Writes(registry.MemberKind{List: &corev1.ServiceList{}}) // the shards
	interesting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		svc, ok := o.(*corev1.Service)
		return ok && (kfedv1alpha1.IsFederated(svc) || controllerutil.ContainsFinalizer(svc, kfedv1alpha1.FinalizerService))
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("federated-service").
		For(&corev1.Service{}, builder.WithPredicates(interesting)).
		Owns(&extdnsv1alpha1.DNSEndpoint{}).
		WatchesRawSource(registry.ChannelSource(c.shards, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(registry.ChannelSource(c.health, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(c.Members.Changes(), handler.EnqueueRequestsFromMapFunc(c.allFederated))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(c.servicesSelecting), builder.WithPredicates(publish.HasTable())).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(c.Workers, 8)}).
		Complete(c)
}

func newService() client.Object { return &corev1.Service{} }

// allFederated answers a change of the Ready members: every federated
// Service, and the origin of every shard kfed made in a Ready member. The
// second sweeps the shards of Services that went while their member was not
// Ready — offline, or its cache still starting after a restart — since
// finalizing a Service reaches only the Ready members, and a member's first
// shard events come before it counts as Ready.
func (c *Controller) allFederated(ctx context.Context, _ client.Object) []ctrl.Request {
	// The caches' own objects, read only: this reads every Service.
	var list corev1.ServiceList
	if err := c.Fed.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var reqs []ctrl.Request
	add := func(key types.NamespacedName) {
		if !seen[key] {
			seen[key] = true
			reqs = append(reqs, ctrl.Request{NamespacedName: key})
		}
	}
	for i := range list.Items {
		svc := &list.Items[i]
		if kfedv1alpha1.IsFederated(svc) || controllerutil.ContainsFinalizer(svc, kfedv1alpha1.FinalizerService) {
			add(client.ObjectKeyFromObject(svc))
		}
	}
	for _, m := range c.Members.Ready() {
		var shards corev1.ServiceList
		if err := m.Client.List(ctx, &shards, client.MatchingLabels{kfedv1alpha1.LabelFederation: c.Federation}, client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for i := range shards.Items {
			if key, ok := copies.Origin(&shards.Items[i], c.Federation); ok {
				add(key)
			}
		}
	}
	return reqs
}

// Reconcile brings one federated Service's shards, DNS records and status in
// line with the world.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var svc corev1.Service
	start := time.Now()
	switch stage, err := clusters.Open(ctx, c.Fed, req.NamespacedName, &svc, kfedv1alpha1.FinalizerService); {
	case err != nil:
		return ctrl.Result{}, err
	case stage == clusters.Gone:
		// Sweep the shards and the DNSEndpoint that still point at it.
		return ctrl.Result{}, errors.Join(c.deleteCopies(ctx, req.NamespacedName), c.sweepEndpoint(ctx, req.NamespacedName))
	case stage == clusters.Finalizing:
		return ctrl.Result{}, c.finalize(ctx, &svc)
	}
	c.Metrics.since(phaseOpen, start)

	before := svc.DeepCopy()
	result, st, err := c.reconcile(ctx, &svc)
	st.apply(&svc)
	if !equality.Semantic.DeepEqual(before.Status, svc.Status) {
		start = time.Now()
		if perr := c.Fed.Status().Patch(ctx, &svc, client.MergeFrom(before)); perr != nil {
			err = errors.Join(err, fmt.Errorf("updating status: %w", perr))
		}
		c.Metrics.since(phaseStatus, start)
		c.events(before, &svc)
	}
	return result, err
}

// reconcile syncs the shards and the DNSEndpoint in the controller
// contract's phases: observe (reads only) → decideCopies (pure) →
// writeCopies → decide (pure, over what the shard writes gave) →
// writeEndpoint. It returns what the status will say: the decision's
// status and the DNS providers' reports on the DNSEndpoint written.
func (c *Controller) reconcile(ctx context.Context, svc *corev1.Service) (ctrl.Result, status, error) {
	cfg, err := parseConfig(svc)
	if err != nil {
		// Bad input freezes the Service as it is: no shard and no record is
		// changed until the user fixes it.
		ctrl.LoggerFrom(ctx).V(1).Info("refused its spec or annotations; nothing changes until they are fixed", "error", err)
		var st status
		st.invalid(reasonInvalidSpec, err.Error())
		return ctrl.Result{}, st, nil
	}
	start := time.Now()
	o, err := c.observe(ctx, svc, cfg)
	if err != nil {
		return ctrl.Result{}, status{}, err
	}
	start = c.Metrics.since(phaseObserve, start)
	actions := decideCopies(svc, c.Federation, o)
	writes := c.writeCopies(ctx, o.key, actions)
	start = c.Metrics.since(phaseCopies, start)
	countWrites(c.Metrics, writes)
	// Members whose shard could not be written are retried with backoff;
	// the records are written all the same.
	retry := writeErrors(writes)
	o.members = gave(writes)
	d, err := decide(o)
	st := d.status
	var published *extdnsv1alpha1.DNSEndpoint
	wrote := false
	if err == nil {
		var op publish.Op
		published, op, err = c.writeEndpoint(ctx, svc, o.published, d)
		c.Metrics.since(phaseEndpoint, start)
		wrote = err == nil
		c.Metrics.endpointWrite(op, &st, wrote)
		retry = errors.Join(retry, err)
	}
	c.tell(svc, writes, &st, wrote)
	if published != nil {
		// A write bumped the generation if the records changed.
		st.providers(published.Status.Publishers, published.Generation)
	}
	res := ctrl.Result{RequeueAfter: d.next}
	// Each change is an Event, logged as well (the manager's recorder);
	// this line, at V(1), tells every reconcile's outcome.
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() { // no sorting in every reconcile for a line nobody reads
		log.Info("decided", "placed", slices.Sorted(maps.Keys(o.placed)), "unknown", o.unknown,
			"records", len(d.endpoints), "requeueAfter", res.RequeueAfter, "retry", retry)
	}
	return res, st, retry
}
