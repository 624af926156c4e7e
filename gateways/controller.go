// Package gateways federates Gateway API Gateways (with the HTTPRoutes and
// GRPCRoutes attached to them) and Ingresses: a control-plane object opted in with
// kfed.io/federated: "true" is copied into each placed member, whose own
// implementation gives the copy addresses; the hostnames it serves that the
// rule of package hostnames lets its namespace hold are published at every
// placed cluster's addresses, in a DNSEndpoint that kfed's readers (the
// CoreDNS plugin, the DNS sync, the health checkers) read as a Service's.
//
// Each reconcile observes (placement, claims, member copies and their
// addresses), decides (pure: decide.go), writes (the DNSEndpoint) and sets
// the status, once.
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

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/hostnames"
	"github.com/kfed-io/kfed/services"
	"github.com/kfed-io/kfed/services/serviceconfig"
)

// AnnotationFederated: "true" opts a Gateway or Ingress in, as a Service.
const AnnotationFederated = "kfed.io/federated"

// AnnotationOrigin on a DNSEndpoint names the Gateway or Ingress it
// publishes: "Kind namespace/name".
const AnnotationOrigin = "kfed.io/hostnames-of"

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways/finalizers,verbs=update
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes;grpcroutes,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses/finalizers,verbs=update
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=kfed.io,namespace=kfed-system,resources=healthreports,verbs=get;list;watch

// Controller reconciles federated Gateways and Ingresses.
type Controller struct {
	// Fed is the control plane client (cached reads).
	Fed      client.Client
	Members  *clusters.Registry
	Recorder events.EventRecorder
	// Federation names the federation; Namespace is kfed's own, where the
	// DNSEndpoints are written (ADR 0008).
	Federation string
	Namespace  string
	// Rule says which namespace holds which hostname; Tenancy is the rule
	// every reader applies to DNSEndpoints, so that a hostname it would
	// refuse from Namespace (a federated Service name) is refused here, with
	// a condition, rather than dropped silently by the readers.
	Rule    hostnames.Rule
	Tenancy dnsendpoint.Tenancy
	// Gateways is true when the control plane serves Gateway API Gateways.
	Gateways bool
	// Freshness is how long a health checker's heartbeat counts;
	// services.DefaultFreshness when zero.
	Freshness time.Duration
	// Workers per kind; 4 when zero.
	Workers int

	// routes are the route kinds the control plane serves.
	routes []routeKind
}

// kinds are the kinds reconciled: Ingresses, and Gateways when served.
func (c *Controller) kinds() []kind {
	kinds := []kind{ingressKind{}}
	if c.Gateways {
		kinds = append(kinds, gatewayKind{fed: c.Fed, routes: c.routes})
	}
	return kinds
}

// reconciler reconciles one kind.
type reconciler struct {
	*Controller
	k      kind
	copies *clusters.Channel[client.Object]
}

// SetupWithManager registers a reconciler for Ingresses and, when the
// control plane serves them, one for Gateways.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
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
	if r.copies, err = clusters.NewChannel[client.Object](mgr); err != nil {
		return err
	}
	interesting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return federated(o) || controllerutil.ContainsFinalizer(o, k.finalizer())
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("federated-"+strings.ToLower(k.name())).
		For(k.newObject(), builder.WithPredicates(interesting)).
		WatchesRawSource(clusters.ChannelSource(r.copies, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(c.Members.Changes(), handler.EnqueueRequestsFromMapFunc(r.all))).
		Watches(&extdnsv1alpha1.DNSEndpoint{}, handler.EnqueueRequestsFromMapFunc(r.ofEndpoint)).
		// A claim of another object, of either kind, can give this one its
		// hostname or take it: every federated object is looked at again
		// when a claim may have changed.
		Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(r.all), claimsMayChange).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(c.Workers, 4)})
	if c.reportsServed(mgr) {
		// A checker's report can move any object's verdicts; reports change
		// only when a checker's findings do.
		b = b.Watches(&kfedv1alpha1.HealthReport{}, handler.EnqueueRequestsFromMapFunc(r.all))
	}
	if c.Gateways {
		b = b.Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(r.all), claimsMayChange)
		for _, rk := range c.routes {
			b = b.Watches(rk.newObj(), handler.EnqueueRequestsFromMapFunc(r.all), claimsMayChange)
		}
	}
	newObj := k.newObject
	switch k.(type) {
	case gatewayKind:
		c.Members.WatchOptional(&gatewayv1.Gateway{}, clusters.ToOrigin(r.copies, c.Federation, newObj))
		for _, rk := range c.routes {
			c.Members.WatchOptional(rk.newObj(), r.routeCopy)
			// A route's labels change without changing any claim; its
			// parents are looked at again all the same, since its copies
			// follow it.
			b = b.Watches(rk.newObj(), handler.EnqueueRequestsFromMapFunc(parentsOf))
		}
	case ingressKind:
		// Optional: a member whose RBAC predates federated Ingresses keeps
		// serving everything else.
		c.Members.WatchOptional(&networkingv1.Ingress{}, clusters.ToOrigin(r.copies, c.Federation, newObj))
	}
	return b.Complete(r)
}

// claimsMayChange passes the events after which an object's claims may
// differ: creation, deletion, a new generation (spec), opting in or out,
// deletion starting. Status writes (kfed's own among them) pass not, so
// that reconciling every object for each of them does not go round.
var claimsMayChange = builder.WithPredicates(predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() || federated(o) != federated(n) ||
			(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
	},
})

// reportsServed reports whether the control plane serves HealthReports: one
// without their CRD has no checkers.
func (c *Controller) reportsServed(mgr ctrl.Manager) bool {
	gvk := kfedv1alpha1.GroupVersion.WithKind("HealthReport")
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// federated reports whether obj opted in.
func federated(obj client.Object) bool { return obj.GetAnnotations()[AnnotationFederated] == "true" }

// all answers every federated object of the reconciler's kind.
func (r *reconciler) all(ctx context.Context, _ client.Object) []ctrl.Request {
	objs, err := r.list(ctx, r.k)
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
	kind, key, ok := strings.Cut(obj.GetAnnotations()[AnnotationOrigin], " ")
	ns, name, ok2 := strings.Cut(key, "/")
	if !ok || !ok2 || kind != r.k.name() {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
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

// routeCopy hears of a route copy kfed made in a member, and looks at the
// Gateways it attaches to again.
func (r *reconciler) routeCopy(_ string, obj client.Object) {
	if _, ok := clusters.Origin(obj, r.Federation); !ok {
		return
	}
	for _, req := range parentsOf(context.Background(), obj) {
		r.copies.Send(clusters.Stub(r.k.newObject, req.NamespacedName))
	}
}

// list returns the federated objects of kind k in the control plane.
func (r *reconciler) list(ctx context.Context, k kind) ([]client.Object, error) {
	var objs []client.Object
	switch k.(type) {
	case gatewayKind:
		var list gatewayv1.GatewayList
		if err := r.Fed.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing Gateways: %w", err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	case ingressKind:
		var list networkingv1.IngressList
		if err := r.Fed.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing Ingresses: %w", err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	}
	return slices.DeleteFunc(objs, func(o client.Object) bool { return !federated(o) || o.GetDeletionTimestamp() != nil }), nil
}

// endpointKey is where the DNSEndpoint of obj is: kfed's namespace, named
// for the kind, namespace and name (a namespace has no dot, so no two
// objects share one).
func (r *reconciler) endpointKey(key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: strings.ToLower(r.k.name()) + "." + key.Namespace + "." + key.Name}
}

// Reconcile brings one federated object's copies, records and status in
// line with the world.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.k.newObject()
	err := r.Fed.Get(ctx, req.NamespacedName, obj)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, r.cleanup(ctx, req.NamespacedName)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if obj.GetDeletionTimestamp() != nil || !federated(obj) {
		return ctrl.Result{}, r.finalize(ctx, obj)
	}
	if !controllerutil.ContainsFinalizer(obj, r.k.finalizer()) {
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		controllerutil.AddFinalizer(obj, r.k.finalizer())
		if err := r.Fed.Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	cfg, err := serviceconfig.Parse(obj.GetAnnotations())
	if err != nil {
		// Bad input freezes the object as it is.
		return ctrl.Result{}, r.setStatus(ctx, obj, nil, []metav1.Condition{{
			Type: CondValid, Status: metav1.ConditionFalse, Reason: reasonInvalid, Message: err.Error(), ObservedGeneration: obj.GetGeneration(),
		}})
	}
	o, copyErrs, err := r.observe(ctx, obj, cfg)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := decide(o)
	werr := r.writeEndpoint(ctx, obj, d)
	serr := r.setStatus(ctx, obj, d.addrs, conditions(d, len(o.placed), obj.GetGeneration()))
	var res ctrl.Result
	if len(o.unhealthy) > 0 {
		// A verdict that stands for want of fresh checkers may change when
		// a heartbeat goes stale, which no report tells.
		res.RequeueAfter = o.freshness
	}
	return res, errors.Join(copyErrs, werr, serr)
}

// observe reads what the object's records depend on and syncs its copies
// in every Ready member. The error is for a read of the control plane that
// failed; copyErrs are member writes to retry.
func (r *reconciler) observe(ctx context.Context, obj client.Object, cfg serviceconfig.Config) (o observation, copyErrs error, err error) {
	o = observation{placed: map[string]place{}, members: map[string]memberCopy{}, ttl: cfg.TTL}
	var all kfedv1alpha1.ClusterList
	if err := r.Fed.List(ctx, &all); err != nil {
		return o, nil, fmt.Errorf("listing Clusters: %w", err)
	}
	for i := range all.Items {
		cl := &all.Items[i]
		if cl.DeletionTimestamp != nil {
			continue
		}
		region, zones := cl.Location()
		if cfg.Placement.Places(cl.Name, region, cl.Labels) {
			o.placed[cl.Name] = place{region: region, zones: zones}
		}
	}
	for _, name := range cfg.Placement.Names {
		if !slices.ContainsFunc(all.Items, func(c kfedv1alpha1.Cluster) bool { return c.Name == name }) {
			o.unknown = append(o.unknown, name)
		}
	}

	hosts, ports, err := r.k.serves(ctx, r.Fed, obj)
	if err != nil {
		return o, nil, err
	}
	o.ports = ports
	if o.verdicts, err = r.judge(ctx, obj, hosts); err != nil {
		return o, nil, err
	}

	var published extdnsv1alpha1.DNSEndpoint
	epKey := r.endpointKey(client.ObjectKeyFromObject(obj))
	switch err := r.Fed.Get(ctx, epKey, &published); {
	case err == nil:
		o.previous, _ = dnsendpoint.ReadClusters(&published)
	case !apierrors.IsNotFound(err):
		return o, nil, err
	}
	health, err := services.ReadHealth(ctx, r.Fed, r.Namespace, r.Federation, time.Now(), r.Freshness)
	if err != nil {
		return o, nil, err
	}
	o.judged, o.freshness, o.unhealthy = health.Judged(), health.Freshness(), map[string]string{}
	for name := range o.placed {
		was := true
		if p, ok := o.previous[name]; ok {
			was = !p.Unhealthy
		}
		// The checkers key what they probe by the DNSEndpoint they read.
		if ok, reason := health.Verdict(kfedv1alpha1.EndpointKey(epKey.Namespace, epKey.Name, name), was); !ok {
			o.unhealthy[name] = cmp.Or(reason, "out until a quorum of fresh checkers finds it up")
		}
	}

	var errs []error
	for _, m := range r.Members.Ready() { // one snapshot for the whole reconcile
		if _, ok := o.placed[m.Name]; !ok {
			errs = append(errs, r.k.remove(ctx, m, client.ObjectKeyFromObject(obj), r.Federation))
			continue
		}
		mc, err := r.k.sync(ctx, m, obj, r.Federation)
		errs = append(errs, err)
		o.members[m.Name] = mc
	}
	return o, errors.Join(errs...), nil
}

// judge gathers every federated object's claims and says which of obj's
// hostnames it holds.
func (r *reconciler) judge(ctx context.Context, obj client.Object, hosts []string) ([]hostnames.Verdict, error) {
	var claims, own []hostnames.Claim
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
				claims = append(claims, hostnames.Claim{Hostname: h, Namespace: o.GetNamespace(), Kind: k.name(), Name: o.GetName(), Created: o.GetCreationTimestamp().Time})
			}
		}
	}
	for _, h := range hosts {
		own = append(own, hostnames.Claim{Hostname: h, Namespace: obj.GetNamespace(), Kind: r.k.name(), Name: obj.GetName(), Created: obj.GetCreationTimestamp().Time})
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

// writeEndpoint creates, updates or deletes the object's DNSEndpoint.
func (r *reconciler) writeEndpoint(ctx context.Context, obj client.Object, d decision) error {
	key := r.endpointKey(client.ObjectKeyFromObject(obj))
	want := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: key.Name, Namespace: key.Namespace,
			Labels:      dnsendpoint.Selector(r.Federation),
			Annotations: map[string]string{AnnotationOrigin: r.k.name() + " " + origin(obj)},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: d.endpoints},
	}
	dnsendpoint.SetClusters(want, d.clusters)
	var cur extdnsv1alpha1.DNSEndpoint
	err := r.Fed.Get(ctx, key, &cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Fed.Create(ctx, want); err != nil {
			return fmt.Errorf("creating DNSEndpoint %s: %w", key, err)
		}
		return nil
	case err != nil:
		return err
	case cur.Annotations[AnnotationOrigin] != want.Annotations[AnnotationOrigin]:
		return fmt.Errorf("DNSEndpoint %s exists and is not this %s's; not touched", key, r.k.name())
	}
	if equality.Semantic.DeepEqual(cur.Spec.Endpoints, want.Spec.Endpoints) &&
		cur.Annotations[dnsendpoint.AnnotationClusters] == want.Annotations[dnsendpoint.AnnotationClusters] &&
		cur.Labels[kfedv1alpha1.LabelFederation] == r.Federation {
		return nil
	}
	cur.Spec.Endpoints = want.Spec.Endpoints
	mergeMeta(&cur.ObjectMeta, want.ObjectMeta)
	if _, ok := want.Annotations[dnsendpoint.AnnotationClusters]; !ok {
		delete(cur.Annotations, dnsendpoint.AnnotationClusters)
	}
	if err := r.Fed.Update(ctx, &cur); err != nil {
		return fmt.Errorf("updating DNSEndpoint %s: %w", key, err)
	}
	return nil
}

// setStatus writes the addresses and conditions, and an Event for each
// condition that turned False (or changed while False).
func (r *reconciler) setStatus(ctx context.Context, obj client.Object, addrs []netip.Addr, conds []metav1.Condition) error {
	before := obj.DeepCopyObject().(client.Object)
	old := r.k.conditions(before)
	merged := slices.Clone(old)
	for _, c := range conds {
		meta.SetStatusCondition(&merged, c)
	}
	inMetadata := r.k.setStatus(obj, addrs, merged)
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	var err error
	if inMetadata {
		// The Ingress's addresses are status, its conditions metadata.
		status := obj.DeepCopyObject().(client.Object)
		if err = r.Fed.Status().Patch(ctx, status, client.MergeFrom(before)); err == nil {
			before.SetResourceVersion("")
			obj.SetResourceVersion("")
			err = r.Fed.Patch(ctx, obj, client.MergeFrom(before))
		}
	} else {
		err = r.Fed.Status().Patch(ctx, obj, client.MergeFrom(before))
	}
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	for _, c := range conds {
		was := meta.FindStatusCondition(old, c.Type)
		if c.Status == metav1.ConditionFalse && c.Reason != reasonWaiting && (was == nil || was.Status != c.Status || was.Message != c.Message) && r.Recorder != nil {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
		}
	}
	return nil
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
	var errs []error
	for _, m := range r.Members.Ready() {
		errs = append(errs, r.k.remove(ctx, m, key, r.Federation))
	}
	var ep extdnsv1alpha1.DNSEndpoint
	epKey := r.endpointKey(key)
	switch err := r.Fed.Get(ctx, epKey, &ep); {
	case err == nil && ep.Annotations[AnnotationOrigin] == r.k.name()+" "+key.String():
		if err := r.Fed.Delete(ctx, &ep); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting DNSEndpoint %s: %w", epKey, err))
			break
		}
		// Before the finalizer goes, so that a crash in between retries it.
		errs = append(errs, services.MarkDeletion(ctx, r.Fed, r.Namespace, r.Federation, epKey.String()+" "+string(ep.UID)))
	case err != nil && !apierrors.IsNotFound(err):
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
