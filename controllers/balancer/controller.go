package balancer

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
)

// Balancers live in the control plane and in members; targets are any kind
// with a /scale in the Balancer's namespace. Deployments are watched so a
// target created late or scaled by hand is noticed at once.
//
// +kubebuilder:rbac:groups=kfed.io,resources=balancers,verbs=get;list;watch
// +kubebuilder:rbac:groups=kfed.io,resources=balancers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// ControlPlane is the cluster label of Balancers in the federation control
// plane, in metrics and logs.
const ControlPlane = "federation"

// podSource says how a cluster's pods are counted.
type podSource int

const (
	// noPods: the control plane, where targets count by their scales' status.
	noPods podSource = iota
	// cachedPods: a member whose pods kfed watches.
	cachedPods
	// unreadablePods: a member whose pods kfed may not list and watch.
	unreadablePods
)

// Request names a Balancer and the cluster it is in.
type Request struct {
	// Cluster is the member's name, empty for the control plane.
	Cluster string
	types.NamespacedName
}

func (r Request) String() string {
	return cmp.Or(r.Cluster, ControlPlane) + "/" + r.NamespacedName.String()
}

// Reconciler reconciles Balancers in the control plane and, when Members is
// set, in every Ready member cluster.
type Reconciler struct {
	// Fed is the control plane's client.
	Fed client.Client
	// Members gives the Ready members' clients; nil reconciles the control
	// plane only.
	Members *registry.Registry
	Metrics *Metrics
	// Workers is the number of concurrent reconciles; 4 when zero.
	Workers int
	// Clock tells the time; SetupWithManager sets the real one when nil.
	Clock clock.PassiveClock

	members *registry.Channel[memberObject]
}

// memberObject is an object that changed in a member cluster.
type memberObject struct {
	cluster string
	obj     client.Object
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	var err error
	if r.members, err = registry.NewChannel[memberObject](mgr); err != nil {
		return err
	}
	log := mgr.GetLogger().WithValues("controller", "balancer")
	b := builder.TypedControllerManagedBy[Request](mgr).
		Named("balancer").
		WatchesRawSource(source.TypedKind(mgr.GetCache(), &kfedv1alpha1.Balancer{},
			handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, b *kfedv1alpha1.Balancer) []Request {
				return []Request{{NamespacedName: client.ObjectKeyFromObject(b)}}
			}),
			// Its own status writes need no reconcile.
			predicate.TypedGenerationChangedPredicate[*kfedv1alpha1.Balancer]{})).
		WatchesRawSource(source.TypedKind(mgr.GetCache(), &appsv1.Deployment{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, d *appsv1.Deployment) []Request {
				return r.balancersOf(ctx, "", r.Fed, d)
			}))).
		WithOptions(controller.TypedOptions[Request]{MaxConcurrentReconciles: cmp.Or(r.Workers, 4)}).
		WithLogConstructor(func(req *Request) logr.Logger {
			if req == nil {
				return log
			}
			return log.WithValues("cluster", cmp.Or(req.Cluster, ControlPlane), "namespace", req.Namespace, "name", req.Name)
		})
	if r.Members != nil {
		// Optional: a member without the Balancer CRD, or whose RBAC
		// predates Balancers, keeps serving federated Services.
		for _, o := range []client.Object{&kfedv1alpha1.Balancer{}, &corev1.Pod{}, &appsv1.Deployment{}} {
			r.Members.WatchOptional(o, r.onMember)
		}
		b = b.WatchesRawSource(registry.ChannelSource(r.members,
			handler.TypedEnqueueRequestsFromMapFunc(r.mapMember))).
			// A member's objects arrive while its cache syncs, before it
			// is Ready; once it is, every Balancer there is looked at.
			WatchesRawSource(source.TypedChannel(r.Members.Changes(),
				handler.TypedEnqueueRequestsFromMapFunc(r.allInMembers)))
	}
	return b.Complete(r)
}

// onMember hands a member object's change to the controller.
func (r *Reconciler) onMember(cluster string, obj client.Object) {
	r.members.Send(memberObject{cluster, obj})
}

func (r *Reconciler) mapMember(ctx context.Context, mo memberObject) []Request {
	if b, ok := mo.obj.(*kfedv1alpha1.Balancer); ok {
		return []Request{{Cluster: mo.cluster, NamespacedName: client.ObjectKeyFromObject(b)}}
	}
	m, ok := r.member(mo.cluster)
	if !ok || !m.Watches(&kfedv1alpha1.Balancer{}) {
		return nil
	}
	return r.balancersOf(ctx, mo.cluster, m.Client, mo.obj)
}

// allInMembers returns every Balancer of every Ready member.
func (r *Reconciler) allInMembers(ctx context.Context, _ client.Object) []Request {
	var out []Request
	for _, m := range r.Members.Ready() {
		if !m.Watches(&kfedv1alpha1.Balancer{}) {
			continue
		}
		var list kfedv1alpha1.BalancerList
		if err := m.Client.List(ctx, &list); err != nil {
			continue
		}
		for i := range list.Items {
			out = append(out, Request{Cluster: m.Name, NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// balancersOf returns the Balancers in obj's namespace that obj concerns:
// those that target it (a Deployment), or whose selector matches it (a Pod).
func (r *Reconciler) balancersOf(ctx context.Context, cluster string, c client.Reader, obj client.Object) []Request {
	var list kfedv1alpha1.BalancerList
	if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []Request
	for i := range list.Items {
		b := &list.Items[i]
		if concerns(b, obj) {
			out = append(out, Request{Cluster: cluster, NamespacedName: client.ObjectKeyFromObject(b)})
		}
	}
	return out
}

func concerns(b *kfedv1alpha1.Balancer, obj client.Object) bool {
	switch obj.(type) {
	case *corev1.Pod:
		sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector)
		return err == nil && !sel.Empty() && sel.Matches(labels.Set(obj.GetLabels()))
	case *appsv1.Deployment:
		for _, t := range b.Spec.Targets {
			if t.ScaleTargetRef.Kind == "Deployment" && t.ScaleTargetRef.Name == obj.GetName() {
				return true
			}
		}
	}
	return false
}

func (r *Reconciler) member(name string) (registry.Member, bool) {
	for _, m := range r.Members.Ready() {
		if m.Name == name {
			return m, true
		}
	}
	return registry.Member{}, false
}

// Reconcile observes one Balancer's targets, plans, and sets their scales.
func (r *Reconciler) Reconcile(ctx context.Context, req Request) (ctrl.Result, error) {
	start := r.Clock.Now()
	c, pods := r.Fed, noPods
	if req.Cluster != "" {
		if r.Members == nil {
			return ctrl.Result{}, nil
		}
		m, ok := r.member(req.Cluster)
		if !ok || !m.Watches(&kfedv1alpha1.Balancer{}) {
			// Not Ready: once it is, all its Balancers are looked at.
			return ctrl.Result{}, nil
		}
		c, pods = m.Client, cachedPods
		if !m.Watches(&corev1.Pod{}) {
			pods = unreadablePods
		}
	}
	var b kfedv1alpha1.Balancer
	if err := c.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	cluster := cmp.Or(req.Cluster, ControlPlane)
	o, due := r.balance(ctx, c, cluster, pods, &b)
	if err := r.writer(c, cluster).writeStatus(ctx, &b, o); err != nil {
		return ctrl.Result{}, err
	}
	result := kfedv1alpha1.ReasonTargetsScaled
	if o.failed != nil {
		result = o.failed.Reason
	}
	r.Metrics.reconciled(cluster, result, r.Clock.Now().Sub(start))
	switch {
	case o.failed == nil && due > 0:
		// Wake when the next pending pod passes the startup timeout.
		return ctrl.Result{RequeueAfter: due + 100*time.Millisecond}, nil
	case o.failed == nil:
		return ctrl.Result{}, nil
	}
	switch o.failed.Reason {
	case kfedv1alpha1.ReasonScaleReadFailed, kfedv1alpha1.ReasonPodListFailed, kfedv1alpha1.ReasonScaleUpdateFailed:
		return ctrl.Result{}, fmt.Errorf("balancer %s: %w", req, o.failed) // retried with backoff
	case kfedv1alpha1.ReasonTargetNotFound, kfedv1alpha1.ReasonNoScaleSubresource, kfedv1alpha1.ReasonTargetKindUnknown:
		// Only Deployments are watched; other kinds are looked at again.
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	return ctrl.Result{}, nil // a spec problem: the fix is a spec change, which is watched
}

// balance runs observe → decide → write for b and returns what happened
// and when to look again for pods passing the startup timeout.
func (r *Reconciler) balance(ctx context.Context, c client.Client, cluster string, pods podSource, b *kfedv1alpha1.Balancer) (outcome, time.Duration) {
	if f := validateSpec(&b.Spec); f != nil {
		return outcome{failed: f}, 0
	}
	targets, f := readScales(ctx, c, b)
	if f != nil {
		return outcome{failed: f}, 0
	}
	var due time.Duration
	switch pods {
	case noPods:
		statusCounts(targets)
	case unreadablePods:
		return outcome{targets: targets, failed: fail(kfedv1alpha1.ReasonPodListFailed,
			"listing pods: kfed may not list and watch pods in %s (apply deploy/member/rbac.yaml there)", cluster)}, 0
	case cachedPods:
		if due, f = countTargetPods(ctx, c, b, targets, r.Clock.Now()); f != nil {
			return outcome{targets: targets, failed: f}, 0
		}
	}
	d, f := decide(b.Namespace+"/"+b.Name, &b.Spec, targets)
	if f != nil {
		return outcome{targets: targets, failed: f}, 0
	}
	if f := r.writer(c, cluster).setScales(ctx, b, targets, d); f != nil {
		return outcome{targets: targets, plan: &d, failed: f}, 0
	}
	return outcome{targets: targets, plan: &d}, due
}

// writer writes through c in cluster, with the Reconciler's clock and
// metrics.
func (r *Reconciler) writer(c client.Client, cluster string) writer {
	return writer{c: c, cluster: cluster, clock: r.Clock, metrics: r.Metrics}
}
