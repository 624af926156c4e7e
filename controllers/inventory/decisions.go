package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/deploymentconfig"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/policy/placement"
	"github.com/kfed-io/kfed/policy/planner"
)

// SchedulerName is the schedulerName of the PlacementDecisions kfed writes.
const SchedulerName = "kfed"

// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=placementdecisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;update;patch

// Decisions keeps, for each federated object of one kind (Services,
// Deployments, Gateways or Ingresses), the PlacementDecision "<kind>-<name>"
// that lists the clusters kfed places it in, and carries out the
// PlacementDecision the object names (kfedv1alpha1.AnnotationPlacementDecision)
// by recording its clusters on the object (kfedv1alpha1.AnnotationPlacementDecided),
// which every controller that places the object reads through package
// placement.
type Decisions struct {
	Fed      client.Client
	Recorder events.EventRecorder
	// Kind is "service", "deployment", "gateway" or "ingress".
	Kind string
	// ProfileNamespace is where the profiles of joined clusters are (the
	// Exporter's namespace); a cluster from the inventory names its own.
	ProfileNamespace string
}

// NewDecisions returns the Decisions controllers of Services and
// Deployments, and of Gateways and Ingresses where kfed federates them
// (the control plane serves them and kfed may watch them).
func NewDecisions(fed client.Client, rec events.EventRecorder, profileNamespace string, withGateways, withIngresses bool) []*Decisions {
	kinds := []string{"service", "deployment"}
	if withGateways {
		kinds = append(kinds, "gateway")
	}
	if withIngresses {
		kinds = append(kinds, "ingress")
	}
	var out []*Decisions
	for _, k := range kinds {
		out = append(out, &Decisions{Fed: fed, Recorder: rec, Kind: k, ProfileNamespace: profileNamespace})
	}
	return out
}

// objectKind is what Decisions needs of a kind of federated object: a new
// object and its list.
type objectKind struct {
	newObject func() client.Object
	newList   func() client.ObjectList
}

func kindOf(kind string) objectKind {
	switch kind {
	case "deployment":
		return objectKind{func() client.Object { return &appsv1.Deployment{} }, func() client.ObjectList { return &appsv1.DeploymentList{} }}
	case "gateway":
		return objectKind{func() client.Object { return &gatewayv1.Gateway{} }, func() client.ObjectList { return &gatewayv1.GatewayList{} }}
	case "ingress":
		return objectKind{func() client.Object { return &networkingv1.Ingress{} }, func() client.ObjectList { return &networkingv1.IngressList{} }}
	}
	return objectKind{func() client.Object { return &corev1.Service{} }, func() client.ObjectList { return &corev1.ServiceList{} }}
}

func (d *Decisions) newObject() client.Object { return kindOf(d.Kind).newObject() }

func (d *Decisions) list(ctx context.Context, opts ...client.ListOption) ([]client.Object, error) {
	l := kindOf(d.Kind).newList()
	if err := d.Fed.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	var out []client.Object
	err := meta.EachListItem(l, func(o runtime.Object) error {
		out = append(out, o.(client.Object))
		return nil
	})
	return out, err
}

// SetupWithManager registers the controller.
func (d *Decisions) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("placement-decisions-"+d.Kind).
		For(d.newObject()).
		Owns(&inventoryv1alpha1.PlacementDecision{}).
		// A decision that an object names changes where the object goes.
		Watches(&inventoryv1alpha1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(d.naming)).
		// A cluster joining, leaving or relabelled changes every placement.
		Watches(&kfedv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(d.all)).
		Complete(d)
}

func (d *Decisions) naming(ctx context.Context, o client.Object) []ctrl.Request {
	objs, err := d.list(ctx, client.InNamespace(o.GetNamespace()))
	if err != nil {
		return nil
	}
	var out []ctrl.Request
	for _, obj := range objs {
		if obj.GetAnnotations()[kfedv1alpha1.AnnotationPlacementDecision] == o.GetName() {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}

func (d *Decisions) all(ctx context.Context, _ client.Object) []ctrl.Request {
	objs, err := d.list(ctx)
	if err != nil {
		return nil
	}
	var out []ctrl.Request
	for _, obj := range objs {
		if kfedv1alpha1.IsFederated(obj) {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}

// DecisionName is the name of the PlacementDecision kfed writes for the
// federated object of kind ("service", "deployment", "gateway" or
// "ingress") named name.
func DecisionName(kind, name string) string { return kind + "-" + name }

// Reconcile records the decision the object names, then writes the one
// kfed made for it.
func (d *Decisions) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := d.newObject()
	key := client.ObjectKey{Namespace: req.Namespace, Name: DecisionName(d.Kind, req.Name)}
	if err := d.Fed.Get(ctx, req.NamespacedName, obj); apierrors.IsNotFound(err) {
		// Its decision goes with it: a control plane of its own (an API
		// server and etcd) runs no garbage collector to follow the owner
		// reference.
		return ctrl.Result{}, d.deleteLeftOver(ctx, key, req.Name)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if !kfedv1alpha1.IsFederated(obj) || obj.GetDeletionTimestamp() != nil {
		var pd inventoryv1alpha1.PlacementDecision
		if err := d.Fed.Get(ctx, key, &pd); err == nil && metav1.IsControlledBy(&pd, obj) {
			return ctrl.Result{}, client.IgnoreNotFound(d.Fed.Delete(ctx, &pd))
		}
		return ctrl.Result{}, nil
	}
	if _, _, err := d.placementOf(obj); err != nil {
		// Its controller refuses the object and freezes it where it is
		// placed: so does its decision, rather than read the placement
		// another way (a bad selector as no selector, every cluster).
		d.warn(obj, "InvalidPlacement", "PlacementDecision %s is kept as it is until the annotations are fixed: %v", key.Name, err)
		return ctrl.Result{}, nil
	}
	if err := d.record(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	placed, err := d.placed(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
		names := make([]string, len(placed))
		for i := range placed {
			names[i] = placed[i].Name
		}
		log.Info("decided", "decision", key.Name, "clusters", names)
	}
	return ctrl.Result{}, d.write(ctx, obj, key, placed)
}

// record writes on obj the clusters of the PlacementDecision it names.
func (d *Decisions) record(ctx context.Context, obj client.Object) error {
	name, ok := obj.GetAnnotations()[kfedv1alpha1.AnnotationPlacementDecision]
	if !ok {
		return nil
	}
	var pd inventoryv1alpha1.PlacementDecision
	var clusters []string
	switch err := d.Fed.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, &pd); {
	case apierrors.IsNotFound(err):
		d.warn(obj, "PlacementDecisionMissing", "PlacementDecision %s/%s does not exist: the object is placed in no cluster until it does", obj.GetNamespace(), name)
	case err != nil:
		return err
	default:
		clusters = decidedClusters(&pd)
	}
	value := placement.Decided(name, clusters)
	if obj.GetAnnotations()[kfedv1alpha1.AnnotationPlacementDecided] == value {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := obj.GetAnnotations()
	ann[kfedv1alpha1.AnnotationPlacementDecided] = value
	obj.SetAnnotations(ann)
	if err := d.Fed.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("recording PlacementDecision %s on %s %s/%s: %w", name, d.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// decidedClusters are the cluster names a decision lists: a cluster's name
// is its ClusterProfile's, for the inventory's clusters and kfed's own alike.
func decidedClusters(pd *inventoryv1alpha1.PlacementDecision) []string {
	var out []string
	for _, dec := range pd.Decisions {
		if n := dec.ClusterProfileRef.Name; n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// placed is the clusters kfed places obj in, by the same rule as the Service
// and Deployment controllers: every Cluster its placement selects (package
// placement) and, for a Deployment, that the planner's preferences can give
// replicas.
func (d *Decisions) placed(ctx context.Context, obj client.Object) ([]kfedv1alpha1.Cluster, error) {
	p, prefs, err := d.placementOf(obj)
	if err != nil {
		return nil, err
	}
	var list kfedv1alpha1.ClusterList
	if err := d.Fed.List(ctx, &list); err != nil {
		return nil, err
	}
	placed, _ := p.Select(list.Items)
	var out []kfedv1alpha1.Cluster
	for _, c := range placed {
		if prefs == nil || plannable(*prefs, c.Name) {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b kfedv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// placementOf reads obj's placement, and a Deployment's replica
// preferences, as the controller that places obj reads them
// (serviceconfig.Parse, deploymentconfig.Parse): every problem they refuse
// is refused here too.
func (d *Decisions) placementOf(obj client.Object) (placement.Placement, *planner.Preferences, error) {
	if d.Kind == "deployment" {
		cfg, err := deploymentconfig.Parse(obj.GetAnnotations())
		return cfg.Placement, &cfg.Preferences, err
	}
	cfg, err := serviceconfig.Parse(obj.GetAnnotations())
	return cfg.Placement, nil, err
}

// plannable reports whether the planner can give cluster any replica under
// prefs: it has an entry, or "*" covers it, and its maximum is not zero.
func plannable(prefs planner.Preferences, cluster string) bool {
	cp, ok := prefs.Clusters[cluster]
	if !ok {
		cp, ok = prefs.Clusters[planner.AnyCluster]
	}
	return ok && (cp.MaxReplicas == nil || *cp.MaxReplicas > 0)
}

func (d *Decisions) write(ctx context.Context, obj client.Object, key client.ObjectKey, placed []kfedv1alpha1.Cluster) error {
	decisions := make([]inventoryv1alpha1.ClusterDecision, 0, len(placed))
	for _, c := range placed {
		ref := inventoryv1alpha1.ClusterProfileReference{Namespace: d.ProfileNamespace, Name: c.Name}
		if r := c.Spec.ClusterProfileRef; r != nil {
			ref.Namespace = r.Namespace
		}
		decisions = append(decisions, inventoryv1alpha1.ClusterDecision{ClusterProfileRef: ref, Reason: reason(obj)})
	}
	if len(decisions) > 100 {
		// KEP-5313 caps a slice at 100; more slices are left for later.
		d.warn(obj, "PlacementDecisionTruncated", "the object is placed in %d clusters; its PlacementDecision lists the first 100", len(decisions))
		decisions = decisions[:100]
	}
	pd := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, d.Fed, pd, func() error {
		switch {
		case pd.CreationTimestamp.IsZero() || metav1.IsControlledBy(pd, obj):
		case d.leftOver(pd, obj.GetName()):
			// An earlier object of this name made it (deleted and made
			// again before the decision went): the new one takes it over.
			pd.OwnerReferences = nil
		default:
			return fmt.Errorf("PlacementDecision %s exists and is not kfed's for %s %s", key, d.Kind, obj.GetName())
		}
		if pd.Labels == nil {
			pd.Labels = map[string]string{}
		}
		pd.Labels[kfedv1alpha1.LabelManagedBy] = kfedv1alpha1.ManagedBy
		if v := key.Name; len(validation.IsValidLabelValue(v)) == 0 {
			pd.Labels[inventoryv1alpha1.LabelPlacementKey] = v
		}
		pd.Decisions, pd.SchedulerName = decisions, SchedulerName
		return controllerutil.SetControllerReference(obj, pd, d.Fed.Scheme())
	})
	if err != nil {
		if !apierrors.IsConflict(err) { // a conflict is retried, not the user's to fix
			d.warn(obj, "PlacementDecisionNotWritten", "%v", err)
		}
		return fmt.Errorf("writing PlacementDecision %s: %w", key, err)
	}
	return nil
}

// leftOver reports whether pd is the decision kfed wrote for an object of
// this kind named name: kfed's label, and a controller of the kind and name
// (whatever its UID).
func (d *Decisions) leftOver(pd *inventoryv1alpha1.PlacementDecision, name string) bool {
	ref := metav1.GetControllerOf(pd)
	gvk, err := apiutil.GVKForObject(d.newObject(), d.Fed.Scheme())
	return err == nil && ref != nil && pd.Labels[kfedv1alpha1.LabelManagedBy] == kfedv1alpha1.ManagedBy &&
		ref.Kind == gvk.Kind && ref.Name == name
}

// deleteLeftOver deletes the decision at key that kfed wrote for the
// object named name, which is gone.
func (d *Decisions) deleteLeftOver(ctx context.Context, key client.ObjectKey, name string) error {
	var pd inventoryv1alpha1.PlacementDecision
	if err := d.Fed.Get(ctx, key, &pd); err != nil || !d.leftOver(&pd, name) {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(d.Fed.Delete(ctx, &pd, client.Preconditions{UID: &pd.UID}))
}

func reason(obj client.Object) string {
	ann := obj.GetAnnotations()
	switch {
	case ann[kfedv1alpha1.AnnotationPlacementDecision] != "":
		return "listed by PlacementDecision " + ann[kfedv1alpha1.AnnotationPlacementDecision]
	case ann[kfedv1alpha1.AnnotationClusters] != "" || ann[kfedv1alpha1.AnnotationClusterSelector] != "":
		return "selected by its kfed.io placement annotations"
	}
	return "every member cluster"
}

func (d *Decisions) warn(obj client.Object, reason, format string, args ...any) {
	if d.Recorder != nil {
		d.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Place", format, args...)
	}
}
