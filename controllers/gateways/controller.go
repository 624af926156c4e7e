// Package gateways federates Gateway API Gateways (with the HTTPRoutes and
// GRPCRoutes attached to them) and Ingresses: a control-plane object opted in with
// kfed.io/federated: "true" is copied into each placed member, whose own
// implementation gives the copy addresses; the hostnames it serves that its
// namespace may hold (package tenancy) are published at every
// placed cluster's addresses, in a DNSEndpoint that kfed's readers (the
// CoreDNS plugin, the DNS sync, the health checkers) read as a Service's.
//
// Each reconcile runs the Service controller's phases. The reconciler and
// every method of it are in controller.go: the watches, the reads
// (placement, claims, weights, the DNSEndpoint published last, health),
// the member copies and the DNSEndpoint written, the status, cleanup on
// deletion. It composes the other files, none of which knows it:
// observe.go (the federated objects listed and their hostname claims
// judged; a copy's hostname address resolved), weights.go (the backends
// and the clusters' weights), decide.go (pure, table-tested: records and
// conditions), write.go (the member copies, written where the object is
// placed and removed where not), status.go (conditions, merged and
// written once). kind.go is what differs between Gateways (gateway.go,
// routes.go) and Ingresses (ingress.go); copy.go is what both do alike to
// a member copy.
package gateways

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways/finalizers,verbs=update
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes;grpcroutes,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses/finalizers,verbs=update
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=kfed.io,resources=healthreports,verbs=get;list;watch

// Controller reconciles federated Gateways and Ingresses.
type Controller struct {
	// Fed is the control plane client (cached reads).
	Fed client.Client
	// Live reads the control plane's API server itself, where a cache that
	// lags could hide a DNSEndpoint that exists; Fed when nil.
	Live     client.Reader
	Members  *registry.Registry
	Recorder events.EventRecorder
	// Federation names the federation; Namespace is kfed's own, where the
	// DNSEndpoints are written (ADR 0008).
	Federation string
	Namespace  string
	// Rule says which namespace holds which hostname; Tenancy is the rule
	// every reader applies to DNSEndpoints, so that a hostname it would
	// refuse from Namespace (a federated Service name) is refused here, with
	// a condition, rather than dropped silently by the readers.
	Rule    tenancy.Hostnames
	Tenancy tenancy.Endpoints
	// Ingresses is true when kfed may list and watch the control plane's
	// Ingresses; Gateways when it serves Gateway API Gateways and kfed may
	// list and watch them. A kind kfed cannot watch (RBAC from an older
	// chart) is left alone rather than holding up the manager's start.
	Ingresses, Gateways bool
	// Resolver resolves members' hostname addresses (an AWS NLB's) every
	// sync, net.DefaultResolver when nil; Resync is how often an object
	// with one is looked at again, a minute when zero.
	Resolver publish.Resolver
	Resync   time.Duration
	// Freshness is how long a health checker's heartbeat counts;
	// publish.DefaultFreshness when zero.
	Freshness time.Duration
	// Workers per kind; 4 when zero.
	Workers int
	// Clock tells the time; SetupWithManager sets the real one when nil.
	Clock clock.PassiveClock

	// routes are the route kinds the control plane serves.
	routes []routeKind
}

// kinds are the kinds reconciled: Ingresses and Gateways, each when kfed
// can watch it.
func (c *Controller) kinds() []kind {
	var kinds []kind
	if c.Ingresses {
		kinds = append(kinds, ingressKind{})
	}
	if c.Gateways {
		kinds = append(kinds, gatewayKind{fed: c.Fed, routes: c.routes})
	}
	return kinds
}

// reconciler reconciles one kind.
type reconciler struct {
	*Controller
	k kind
	// copies carries changes of member copies, health changes of verdicts,
	// as stubs of the objects to reconcile.
	copies, health *registry.Channel[client.Object]
}

// SetupWithManager registers a reconciler for Ingresses and one for
// Gateways, each when kfed can watch that kind.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Gateways {
		c.routes = servedRoutes(mgr.GetRESTMapper())
	}
	for _, k := range c.kinds() {
		if err := c.setup(mgr, k); err != nil {
			return fmt.Errorf("setting up federated %ss: %w", k.name(), err)
		}
	}
	return nil
}

func (c *Controller) setup(mgr ctrl.Manager, k kind) error {
	r := &reconciler{Controller: c, k: k}
	var err error
	if r.copies, err = registry.NewChannel[client.Object](mgr); err != nil {
		return err
	}
	if r.health, err = registry.NewChannel[client.Object](mgr); err != nil {
		return err
	}
	interesting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return kfedv1alpha1.IsFederated(o) || controllerutil.ContainsFinalizer(o, k.finalizer())
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("federated-"+strings.ToLower(k.name())).
		For(k.newObject(), builder.WithPredicates(interesting)).
		WatchesRawSource(registry.ChannelSource(r.copies, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(c.Members.Changes(), handler.EnqueueRequestsFromMapFunc(r.all))).
		Watches(&extdnsv1alpha1.DNSEndpoint{}, handler.EnqueueRequestsFromMapFunc(r.ofEndpoint)).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(c.Workers, 4)})
	// A claim of another object, of either kind, can give this one its
	// hostname or take it: every federated object is looked at again when a
	// claim may have changed.
	if c.Ingresses {
		b = b.Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(r.all), claimsMayChange)
	}
	// Weights follow the Deployments behind the backends, and the
	// Services that select them.
	b = b.Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.backedBy), builder.WithPredicates(publish.HasTable())).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.backedBy), builder.WithPredicates(selectorChanged))
	if err := mgr.Add(r.healthWatch(mgr)); err != nil {
		return err
	}
	b = b.WatchesRawSource(registry.ChannelSource(r.health, &handler.EnqueueRequestForObject{}))
	if c.Gateways {
		b = b.Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(r.all), claimsMayChange)
		for _, rk := range c.routes {
			b = b.Watches(rk.newObj(), handler.EnqueueRequestsFromMapFunc(r.all), claimsMayChange)
		}
	}
	newObj := k.newObject
	switch k.(type) {
	case gatewayKind:
		c.Members.WatchOptional(&gatewayv1.Gateway{}, copies.ToOrigin(r.copies, c.Federation, newObj))
		c.Members.Writes(registry.MemberKind{List: &gatewayv1.GatewayList{}})
		for _, rk := range c.routes {
			c.Members.WatchOptional(rk.newObj(), r.routeCopy)
			c.Members.Writes(registry.MemberKind{List: rk.newList()})
			// A route's labels change without changing any claim; its
			// parents are looked at again all the same, since its copies
			// follow it.
			b = b.Watches(rk.newObj(), handler.EnqueueRequestsFromMapFunc(parentsOf))
		}
	case ingressKind:
		// Optional: a member whose RBAC predates federated Ingresses keeps
		// serving everything else.
		c.Members.WatchOptional(&networkingv1.Ingress{}, copies.ToOrigin(r.copies, c.Federation, newObj))
		c.Members.Writes(registry.MemberKind{List: &networkingv1.IngressList{}})
	}
	return b.Complete(r)
}

// healthWatch reconciles the objects whose verdicts a checker's report or
// heartbeat may change (publish.HealthWatch), as the Service controller
// does: a DNSEndpoint of this kind's in kfed's namespace is named
// "kind.namespace.name".
func (r *reconciler) healthWatch(mgr ctrl.Manager) *publish.HealthWatch {
	return &publish.HealthWatch{
		Cache: mgr.GetCache(), Federation: r.Federation, Freshness: r.Freshness, Clock: r.Clock,
		Enqueue: func(ep types.NamespacedName) {
			if key, ok := r.objectOf(ep); ok {
				r.health.Send(registry.Stub(r.k.newObject, key))
			}
		},
		All: func(ctx context.Context) {
			for _, req := range r.all(ctx, nil) {
				r.health.Send(registry.Stub(r.k.newObject, req.NamespacedName))
			}
		},
	}
}

// all answers every federated object of the reconciler's kind.
func (r *reconciler) all(ctx context.Context, _ client.Object) []ctrl.Request {
	objs, err := listFederated(ctx, r.Fed, r.k)
	if err != nil {
		return nil
	}
	var reqs []ctrl.Request
	for _, o := range objs {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	return reqs
}

// ofEndpoint answers the object a DNSEndpoint of kfed's publishes.
func (r *reconciler) ofEndpoint(_ context.Context, obj client.Object) []ctrl.Request {
	kind, key, ok := strings.Cut(obj.GetAnnotations()[kfedv1alpha1.AnnotationHostnamesOf], " ")
	ns, name, ok2 := strings.Cut(key, "/")
	if !ok || !ok2 || kind != r.k.name() {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// backedBy answers the federated objects of the reconciler's kind whose
// backends are the Service obj, or a Service selecting the Deployment obj.
func (r *reconciler) backedBy(ctx context.Context, obj client.Object) []ctrl.Request {
	names := backendsNamed(ctx, r.Fed, obj)
	if len(names) == 0 {
		return nil
	}
	objs, err := listFederated(ctx, r.Fed, r.k)
	if err != nil {
		return nil
	}
	var reqs []ctrl.Request
	for _, o := range objs {
		if o.GetNamespace() != obj.GetNamespace() {
			continue
		}
		backends, err := r.k.backends(ctx, r.Fed, o)
		if err == nil && slices.ContainsFunc(backends, func(b string) bool { return slices.Contains(names, b) }) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		}
	}
	return reqs
}

// routeCopy hears of a route copy kfed made in a member, and looks at the
// Gateways it attaches to again.
func (r *reconciler) routeCopy(_ string, obj client.Object) {
	if _, ok := copies.Origin(obj, r.Federation); !ok {
		return
	}
	for _, req := range parentsOf(context.Background(), obj) {
		r.copies.Send(registry.Stub(r.k.newObject, req.NamespacedName))
	}
}

// endpointKey is where the DNSEndpoint of obj is: kfed's namespace, named
// for the kind, namespace and name (a namespace has no dot, so no two
// objects share one).
func (r *reconciler) endpointKey(key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: strings.ToLower(r.k.name()) + "." + key.Namespace + "." + key.Name}
}

// objectOf is the object of the reconciler's kind whose DNSEndpoint is at
// ep (endpointKey backwards), if any.
func (r *reconciler) objectOf(ep types.NamespacedName) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(ep.Name, strings.ToLower(r.k.name())+".")
	ns, name, ok2 := strings.Cut(rest, ".")
	if ep.Namespace != r.Namespace || !ok || !ok2 {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// publisher writes the objects' DNSEndpoints.
func (r *reconciler) publisher() publish.Publisher {
	return publish.Publisher{Client: r.Fed, Live: r.Live, Federation: r.Federation, Namespace: r.Namespace}
}

// Reconcile brings one federated object's copies, records and status in
// line with the world.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.k.newObject()
	switch stage, err := clusters.Open(ctx, r.Fed, req.NamespacedName, obj, r.k.finalizer()); {
	case err != nil:
		return ctrl.Result{}, err
	case stage == clusters.Gone:
		return ctrl.Result{}, r.cleanup(ctx, req.NamespacedName)
	case stage == clusters.Finalizing:
		return ctrl.Result{}, r.finalize(ctx, obj)
	}
	cfg, err := serviceconfig.Parse(obj.GetAnnotations())
	if err != nil {
		// Bad input freezes the object as it is.
		ctrl.LoggerFrom(ctx).V(1).Info("refused its annotations; nothing changes until they are fixed", "error", err)
		return ctrl.Result{}, r.setStatus(ctx, obj, nil, nil, []metav1.Condition{{
			Type: kfedv1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: reasonInvalid, Message: err.Error(), ObservedGeneration: obj.GetGeneration(),
		}})
	}
	o, err := r.observe(ctx, obj, cfg)
	if err != nil {
		return ctrl.Result{}, err
	}
	copyErrs := writeCopies(ctx, r.Members.Ready(), r.k, r.Federation, r.Resolver, obj, &o)
	d := decide(o)
	werr := r.writeEndpoint(ctx, obj, o.endpoint, d)
	serr := r.setStatus(ctx, obj, d.statusAddrs, d.hostnames, conditions(d, len(o.placed), obj.GetGeneration()))
	res := ctrl.Result{RequeueAfter: d.next}
	ctrl.LoggerFrom(ctx).V(1).Info("decided", "serving", d.serving, "waiting", d.waiting, "offline", d.offline, "unknown", o.unknown,
		"published", d.published, "refused", len(d.refused), "problems", d.problems, "requeueAfter", res.RequeueAfter)
	return res, errors.Join(copyErrs, werr, serr)
}

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
	claims, err := allClaims(ctx, r.Fed, r.kinds())
	if err != nil {
		return o, err
	}
	o.verdicts = judge(r.Rule, r.Tenancy, r.Namespace, claimsOf(r.k, obj, hosts), claims)
	if o.weights, err = observeWeights(ctx, r.Fed, r.k, obj); err != nil {
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

// setStatus writes the addresses and conditions, and an Event for each
// condition that turned False (or changed while False).
func (r *reconciler) setStatus(ctx context.Context, obj client.Object, addrs []netip.Addr, hostnames []string, conds []metav1.Condition) error {
	before := obj.DeepCopyObject().(client.Object)
	old := r.k.conditions(before)
	inMetadata := r.k.setStatus(obj, addrs, hostnames, mergeConditions(old, conds))
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	if err := patchStatus(ctx, r.Fed, before, obj, inMetadata); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	for _, c := range r.k.conditions(obj) { // as written: a Gateway folds some
		was := meta.FindStatusCondition(old, c.Type)
		if c.Status == metav1.ConditionFalse && c.Reason != reasonWaiting && (was == nil || was.Status != c.Status || was.Message != c.Message) && r.Recorder != nil {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
		}
	}
	return nil
}

// writeEndpoint writes the object's DNSEndpoint (publish.Publisher.Write),
// in kfed's namespace, naming the object it publishes.
// cur is the DNSEndpoint as the cache has it, nil when none.
func (r *reconciler) writeEndpoint(ctx context.Context, obj client.Object, cur *extdnsv1alpha1.DNSEndpoint, d decision) error {
	_, _, err := r.publisher().Write(ctx, cur, publish.Record{
		Key: r.endpointKey(client.ObjectKeyFromObject(obj)), Owner: obj, Origin: r.k.name() + " " + origin(obj),
		Endpoints: d.endpoints, Clusters: d.clusters, Annotations: d.health,
	})
	return err
}

// finalize removes what kfed made for obj — its copies in the Ready
// members and its DNSEndpoint — and drops the finalizer.
func (r *reconciler) finalize(ctx context.Context, obj client.Object) error {
	if !controllerutil.ContainsFinalizer(obj, r.k.finalizer()) {
		return nil
	}
	if err := r.cleanup(ctx, client.ObjectKeyFromObject(obj)); err != nil {
		return err
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(obj, r.k.finalizer())
	if err := r.Fed.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	return nil
}

// cleanup deletes the copies of key kfed made in the Ready members and its
// DNSEndpoint.
func (r *reconciler) cleanup(ctx context.Context, key types.NamespacedName) error {
	errs := []error{removeCopies(ctx, r.Members.Ready(), r.k, key, r.Federation)}
	// Publisher.Delete marks the deletion on the serial marker before the
	// finalizer goes, so that a crash in between retries it.
	if _, err := r.publisher().Delete(ctx, r.endpointKey(key), r.k.name()+" "+key.String(), ""); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
