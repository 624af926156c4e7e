package deployments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
)

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Controller reconciles federated Deployments.
type Controller struct {
	// Fed is the control plane's client (cached reads).
	Fed      client.Client
	Members  *registry.Registry
	Recorder events.EventRecorder
	// Federation names this federation on the copies.
	Federation string
	Metrics    *Metrics
	// Workers is how many Deployments are reconciled at once; 4 when zero.
	// A long plan holds one worker, never the others.
	Workers int
	// UnschedulableThreshold is how long a pod may stay unschedulable
	// before its cluster counts as full; DefaultUnschedulableThreshold when
	// zero. The annotation kfed.io/unschedulable-threshold overrides it.
	UnschedulableThreshold time.Duration
	// GracePeriod is how long a member that cannot be reached keeps its
	// replicas before they are planned elsewhere; DefaultGracePeriod when
	// zero.
	GracePeriod time.Duration
	// Clock tells the time; SetupWithManager sets the real one when nil.
	Clock clock.PassiveClock

	// copies carries changes of member copies and their pods, as stubs of
	// the federated Deployments to reconcile.
	copies *registry.Channel[client.Object]
}

// SetupWithManager registers the controller: it watches federated
// Deployments and the ReplicaSets a Deployment controller would make for
// them in the control plane, their copies in every member, and the set of
// Ready members.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	var err error
	if c.copies, err = registry.NewChannel[client.Object](mgr); err != nil {
		return err
	}
	// Optional: a member whose RBAC predates federated Deployments keeps
	// serving Services, and gets no copies.
	c.Members.WatchOptional(&appsv1.Deployment{}, c.onMember)
	c.Members.Writes(registry.MemberKind{List: &appsv1.DeploymentList{}}) // the copies
	// Pods tell when a cluster is full, or has room again; ReplicaSets which
	// pods are the newest. A member where kfed may not read them gets copies
	// but its capacity is not learned.
	c.Members.WatchOptional(&corev1.Pod{}, c.onMemberPod)
	c.Members.WatchOptional(&appsv1.ReplicaSet{}, func(string, client.Object) {})
	interesting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		d, ok := o.(*appsv1.Deployment)
		return ok && (kfedv1alpha1.IsFederated(d) || controllerutil.ContainsFinalizer(d, kfedv1alpha1.FinalizerDeployment))
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("federated-deployment").
		For(&appsv1.Deployment{}, builder.WithPredicates(interesting)).
		Watches(&appsv1.ReplicaSet{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&appsv1.Deployment{}, handler.OnlyControllerOwner())).
		WatchesRawSource(registry.ChannelSource(c.copies, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(c.Members.Changes(), handler.EnqueueRequestsFromMapFunc(c.allFederated))).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(c.Workers, 4)}).
		Complete(c)
}

// onMember turns a change of a member copy into a reconcile of the
// federated Deployment it was made from.
func (c *Controller) onMember(_ string, obj client.Object) {
	if key, ok := copies.Origin(obj, c.Federation); ok {
		c.copies.Send(registry.Stub(newDeployment, key))
	}
}

func newDeployment() client.Object { return &appsv1.Deployment{} }

// onMemberPod turns a change of a pod of a member copy into a reconcile of
// the federated Deployment. A pod's ReplicaSet is named after its
// Deployment and the pod's template hash.
func (c *Controller) onMemberPod(cluster string, obj client.Object) {
	ref := metav1.GetControllerOf(obj)
	hash := obj.GetLabels()[appsv1.DefaultDeploymentUniqueLabelKey]
	if ref == nil || ref.Kind != "ReplicaSet" || hash == "" || !strings.HasSuffix(ref.Name, "-"+hash) {
		return
	}
	m, ok := c.member(cluster)
	if !ok {
		return
	}
	var d appsv1.Deployment
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: strings.TrimSuffix(ref.Name, "-"+hash)}
	if err := m.Client.Get(context.Background(), key, &d); err != nil {
		return
	}
	c.onMember(cluster, &d)
}

func (c *Controller) member(name string) (registry.Member, bool) {
	for _, m := range c.readyMembers() {
		if m.Name == name {
			return m, true
		}
	}
	return registry.Member{}, false
}

func (c *Controller) allFederated(ctx context.Context, _ client.Object) []ctrl.Request {
	var list appsv1.DeploymentList
	if err := c.Fed.List(ctx, &list); err != nil {
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		d := &list.Items[i]
		if kfedv1alpha1.IsFederated(d) || controllerutil.ContainsFinalizer(d, kfedv1alpha1.FinalizerDeployment) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(d)})
		}
	}
	return reqs
}

// readyMembers are the Ready members whose Deployments kfed watches.
func (c *Controller) readyMembers() []registry.Member {
	return slices.DeleteFunc(c.Members.Ready(), func(m registry.Member) bool { return !m.Watches(&appsv1.Deployment{}) })
}

// Reconcile brings one federated Deployment's copies and status in line.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := c.Clock.Now()
	var d appsv1.Deployment
	switch stage, err := clusters.Open(ctx, c.Fed, req.NamespacedName, &d, kfedv1alpha1.FinalizerDeployment); {
	case err != nil:
		return ctrl.Result{}, err
	case stage == clusters.Gone:
		// Sweep the copies that still point at it.
		return ctrl.Result{}, c.removeCopies(ctx, req.NamespacedName, false)
	case stage == clusters.Finalizing:
		return ctrl.Result{}, c.finalize(ctx, &d)
	}
	o := c.writer().sync(ctx, &d, c.observer().observe(ctx, &d))
	if err := writeStatus(ctx, c.Fed, c.Recorder, &d, o, c.Clock.Now()); err != nil {
		return ctrl.Result{}, err
	}
	result := ReasonSynced
	switch {
	case o.invalid != nil:
		result = ReasonInvalidPreferences
	case len(o.failed) > 0:
		result = ReasonMemberWriteFailed
	}
	c.Metrics.reconciled(result, c.Clock.Now().Sub(start))
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() { // no sorting in every reconcile for a line nobody reads
		log.Info("decided", "result", result, "failed", slices.Sorted(maps.Keys(o.failed)), "invalid", o.invalid, "due", o.due)
	}
	if len(o.failed) > 0 {
		return ctrl.Result{}, fmt.Errorf("deployment %s: %s", req, joinProblems(o.failed)) // retried with backoff
	}
	if o.due > 0 {
		// Wake when the next unschedulable pod crosses the threshold, or an
		// unreachable member's grace period ends.
		return ctrl.Result{RequeueAfter: o.due + 100*time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

// finalize deletes d's copies, or lets go of them when d is deleted with
// orphan propagation (kubectl delete --cascade=orphan), and then lets d go.
func (c *Controller) finalize(ctx context.Context, d *appsv1.Deployment) error {
	if !controllerutil.ContainsFinalizer(d, kfedv1alpha1.FinalizerDeployment) {
		return nil
	}
	orphan := d.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(d, metav1.FinalizerOrphanDependents)
	if err := c.removeCopies(ctx, client.ObjectKeyFromObject(d), orphan); err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(d, kfedv1alpha1.FinalizerDeployment)
	if d.DeletionTimestamp != nil {
		// The API server adds these for kubectl's --cascade=orphan and
		// --cascade=foreground and leaves them to the garbage collector. A
		// federation control plane runs none, and the Deployment has no
		// dependents there, so kfed, having handled its copies, removes them.
		controllerutil.RemoveFinalizer(d, metav1.FinalizerOrphanDependents)
		controllerutil.RemoveFinalizer(d, metav1.FinalizerDeleteDependents)
	} else {
		// No longer federated: take back kfed's conditions and table.
		sp := client.MergeFrom(d.DeepCopy())
		d.Status.Conditions = slices.DeleteFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
			return strings.HasPrefix(string(c.Type), "kfed.io/")
		})
		if err := c.Fed.Status().Patch(ctx, d, sp); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing kfed's conditions: %w", err)
		}
		patch = client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(d, kfedv1alpha1.FinalizerDeployment)
		delete(d.Annotations, clusterreplicas.Annotation)
	}
	if err := c.Fed.Patch(ctx, d, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	return nil
}

// removeCopies deletes (or, with orphan, lets go of) the copies of key in
// every Ready member. Copies kfed adopted are always let go of.
func (c *Controller) removeCopies(ctx context.Context, key types.NamespacedName, orphan bool) error {
	var errs []error
	for _, m := range c.readyMembers() {
		var cur appsv1.Deployment
		switch err := m.Client.Get(ctx, key, &cur); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("reading the copy in cluster %s: %w", m.Name, err))
			continue
		}
		if err := c.writer().removeCopy(ctx, m, &cur, copies.Classify(&cur, key.String(), c.Federation), orphan); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// observer reads with the Controller's clients and settings.
func (c *Controller) observer() observer {
	return observer{fed: c.Fed, ready: c.readyMembers(), federation: c.Federation,
		threshold: c.UnschedulableThreshold, grace: c.GracePeriod, clock: c.Clock}
}

// writer writes copies with the Controller's metrics and recorder.
func (c *Controller) writer() copyWriter {
	return copyWriter{federation: c.Federation, metrics: c.Metrics, recorder: c.Recorder}
}
