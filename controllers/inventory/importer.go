// Package inventory connects kfed to the Cluster Inventory API
// (multicluster.x-k8s.io): the Importer makes the ClusterProfiles of a
// namespace kfed's members, the Exporter lists kfed's joined members as
// ClusterProfiles, and the Decisions controller writes a PlacementDecision
// per federated Service and Deployment and carries out the decisions that
// federated objects name (kfedv1alpha1.AnnotationPlacementDecision).
package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/internal/geo"
)

// Property names the Importer reads a cluster's place from. Region and zone
// are the Kubernetes topology labels' names; several zones are given
// comma-separated. A property that is absent leaves the place to the
// member's nodes' labels, as kfed join without --region and --zone does.
const (
	PropertyRegion = corev1.LabelTopologyRegion
	PropertyZone   = corev1.LabelTopologyZone
	// PropertyLocation is "LAT,LON" in decimal degrees, such as
	// "40.71,-74.01"; absent, the region's place in kfed's table of cloud
	// regions.
	PropertyLocation = "location.kfed.io/coordinates"
)

// ManagerName is the cluster manager name kfed writes on the profiles of its
// joined clusters; the Importer never imports those.
const ManagerName = "kfed"

// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=kfed.io,resources=clusters,verbs=get;list;watch;create;update;patch;delete

// Importer keeps one Cluster per ClusterProfile of Namespace (matching
// Selector), so that every controller that acts on Clusters acts on the
// inventory's clusters unchanged.
type Importer struct {
	Fed      client.Client
	Recorder events.EventRecorder
	// Namespace holds the inventory's ClusterProfiles.
	Namespace string
	// Selector, if set, picks the profiles by label, such as
	// multicluster.x-k8s.io/clusterset=prod.
	Selector labels.Selector
	// Requeue is how long a deleted profile waits for its Cluster's
	// cleanup between checks; 2 s when zero.
	Requeue time.Duration
}

// SetupWithManager registers the Importer.
func (im *Importer) SetupWithManager(mgr ctrl.Manager) error {
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == im.Namespace })
	return ctrl.NewControllerManagedBy(mgr).
		Named("inventory-importer").
		For(&inventoryv1alpha1.ClusterProfile{}, builder.WithPredicates(inNamespace)).
		// A Cluster changed or deleted by hand is put back; at start, one
		// whose profile went away meanwhile is removed.
		Watches(&kfedv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToProfile)).
		Complete(im)
}

func clusterToProfile(_ context.Context, o client.Object) []ctrl.Request {
	c, ok := o.(*kfedv1alpha1.Cluster)
	if !ok || c.Labels[kfedv1alpha1.LabelInventory] != kfedv1alpha1.InventoryClusterProfile || c.Spec.ClusterProfileRef == nil {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: c.Spec.ClusterProfileRef.Namespace, Name: c.Spec.ClusterProfileRef.Name}}}
}

// Reconcile creates, updates or deletes the Cluster of one profile.
func (im *Importer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace != im.Namespace {
		return ctrl.Result{}, nil
	}
	var p inventoryv1alpha1.ClusterProfile
	err := im.Fed.Get(ctx, req.NamespacedName, &p)
	if apierrors.IsNotFound(err) {
		_, err := im.removeCluster(ctx, req.NamespacedName)
		return ctrl.Result{}, err
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if p.DeletionTimestamp != nil || !im.imports(&p) {
		gone, err := im.removeCluster(ctx, req.NamespacedName)
		if err != nil || !gone {
			return ctrl.Result{RequeueAfter: im.requeue()}, err
		}
		if controllerutil.ContainsFinalizer(&p, kfedv1alpha1.FinalizerInventoryMember) {
			patch := client.MergeFrom(p.DeepCopy())
			controllerutil.RemoveFinalizer(&p, kfedv1alpha1.FinalizerInventoryMember)
			return ctrl.Result{}, client.IgnoreNotFound(im.Fed.Patch(ctx, &p, patch))
		}
		return ctrl.Result{}, nil
	}
	if msgs := validation.IsDNS1123Label(p.Name); len(msgs) > 0 {
		im.warn(&p, "InvalidName", "ClusterProfile %s cannot be a kfed member: its name is not a DNS label (%s), and it names the cluster in DNS", p.Name, msgs[0])
		return ctrl.Result{}, nil
	}
	var c kfedv1alpha1.Cluster
	err = im.Fed.Get(ctx, client.ObjectKey{Name: p.Name}, &c)
	switch {
	case err == nil && !ours(&c, req.NamespacedName):
		// A joined cluster keeps its name: kfed join came first, or the
		// user chose it; the profile waits until the name is free.
		im.warn(&p, "NameTaken", "a Cluster named %s that is not this profile's exists (joined with kfed join, or from another profile); the profile is not federated to until it is gone", p.Name)
		return ctrl.Result{}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	if !controllerutil.ContainsFinalizer(&p, kfedv1alpha1.FinalizerInventoryMember) {
		patch := client.MergeFrom(p.DeepCopy())
		controllerutil.AddFinalizer(&p, kfedv1alpha1.FinalizerInventoryMember)
		if err := im.Fed.Patch(ctx, &p, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	want, problem := desiredCluster(&p)
	if problem != "" {
		im.warn(&p, "InvalidProperty", "%s", problem)
	}
	if apierrors.IsNotFound(err) {
		if err := im.Fed.Create(ctx, want); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating cluster %s for ClusterProfile %s: %w", p.Name, req, err)
		}
		return ctrl.Result{}, nil
	}
	if c.DeletionTimestamp != nil {
		return ctrl.Result{RequeueAfter: im.requeue()}, nil // being removed; created again once gone
	}
	before := c.DeepCopy()
	c.Labels, c.Annotations = want.Labels, mergeAnnotations(c.Annotations, want.Annotations)
	c.Spec.Region, c.Spec.Zones, c.Spec.Location = want.Spec.Region, want.Spec.Zones, want.Spec.Location
	c.Spec.ClusterProfileRef = want.Spec.ClusterProfileRef
	if equalCluster(before, &c) {
		return ctrl.Result{}, nil
	}
	if err := im.Fed.Update(ctx, &c); err != nil {
		return ctrl.Result{}, fmt.Errorf("updating cluster %s for ClusterProfile %s: %w", p.Name, req, err)
	}
	return ctrl.Result{}, nil
}

// imports reports whether p is one of the inventory's clusters for kfed: in
// the selector, and not a profile kfed wrote for a joined cluster.
func (im *Importer) imports(p *inventoryv1alpha1.ClusterProfile) bool {
	if p.Labels[inventoryv1alpha1.LabelClusterManager] == ManagerName || p.Spec.ClusterManager.Name == ManagerName {
		return false
	}
	return im.Selector == nil || im.Selector.Matches(labels.Set(p.Labels))
}

// removeCluster deletes the Cluster kfed keeps for profile key; it reports
// whether it is gone (its member cleanup may hold it a while).
func (im *Importer) removeCluster(ctx context.Context, key client.ObjectKey) (bool, error) {
	var c kfedv1alpha1.Cluster
	if err := im.Fed.Get(ctx, client.ObjectKey{Name: key.Name}, &c); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	if !ours(&c, key) {
		return true, nil
	}
	if c.DeletionTimestamp == nil {
		if err := im.Fed.Delete(ctx, &c); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting cluster %s of ClusterProfile %s: %w", c.Name, key, err)
		}
	}
	return false, nil
}

// ours reports whether c is the Cluster kfed keeps for the profile key.
func ours(c *kfedv1alpha1.Cluster, key client.ObjectKey) bool {
	r := c.Spec.ClusterProfileRef
	return c.Labels[kfedv1alpha1.LabelInventory] == kfedv1alpha1.InventoryClusterProfile &&
		r != nil && r.Namespace == key.Namespace && r.Name == key.Name
}

// desiredCluster is the Cluster of profile p: its labels (so cluster
// selectors see them), its place from the properties, and annotations that
// carry what the Cluster controller and registry must react to. A property
// that cannot be read is left out and described.
func desiredCluster(p *inventoryv1alpha1.ClusterProfile) (*kfedv1alpha1.Cluster, string) {
	lbls := maps.Clone(p.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[kfedv1alpha1.LabelInventory] = kfedv1alpha1.InventoryClusterProfile
	healthy := string(metav1.ConditionUnknown)
	if cond := meta.FindStatusCondition(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy); cond != nil {
		healthy = string(cond.Status)
	}
	c := &kfedv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{
			Name:   p.Name,
			Labels: lbls,
			Annotations: map[string]string{
				kfedv1alpha1.AnnotationControlPlaneHealthy:  healthy,
				kfedv1alpha1.AnnotationClusterProfileAccess: accessHash(p),
			},
		},
		Spec: kfedv1alpha1.ClusterSpec{
			ClusterProfileRef: &kfedv1alpha1.ObjectRef{Namespace: p.Namespace, Name: p.Name},
		},
	}
	var problems []string
	if r := p.Property(PropertyRegion); r != "" {
		if msgs := validation.IsDNS1123Label(r); len(msgs) > 0 {
			problems = append(problems, fmt.Sprintf("property %s=%q: %s", PropertyRegion, r, msgs[0]))
		} else {
			c.Spec.Region = r
		}
	}
	if z := p.Property(PropertyZone); z != "" {
		for _, zone := range strings.Split(z, ",") {
			zone = strings.TrimSpace(zone)
			if msgs := validation.IsDNS1123Label(zone); len(msgs) > 0 {
				problems = append(problems, fmt.Sprintf("property %s=%q: zone %q: %s", PropertyZone, z, zone, msgs[0]))
				c.Spec.Zones = nil
				break
			}
			c.Spec.Zones = append(c.Spec.Zones, zone)
		}
	}
	if l := p.Property(PropertyLocation); l != "" {
		lat, lon, _ := strings.Cut(l, ",")
		if pt, err := geo.ParseLatLon(strings.TrimSpace(lat), strings.TrimSpace(lon)); err != nil {
			problems = append(problems, fmt.Sprintf("property %s=%q: %v", PropertyLocation, l, err))
		} else {
			c.Spec.Location = kfedv1alpha1.NewGeoLocation(pt)
		}
	}
	if len(problems) == 0 {
		return c, ""
	}
	return c, fmt.Sprintf("ClusterProfile %s: %s; kfed uses the member's nodes' labels or its region's place instead", p.Name, strings.Join(problems, "; "))
}

// accessHash identifies the profile's access providers.
func accessHash(p *inventoryv1alpha1.ClusterProfile) string {
	data, _ := json.Marshal([]any{p.Status.AccessProviders, p.Status.CredentialProviders})
	return fmt.Sprintf("%x", sha256.Sum256(data))[:16]
}

func mergeAnnotations(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

func equalCluster(a, b *kfedv1alpha1.Cluster) bool {
	ja, _ := json.Marshal([]any{a.Labels, a.Annotations, a.Spec})
	jb, _ := json.Marshal([]any{b.Labels, b.Annotations, b.Spec})
	return string(ja) == string(jb)
}

func (im *Importer) warn(p *inventoryv1alpha1.ClusterProfile, reason, format string, args ...any) {
	if im.Recorder != nil {
		im.Recorder.Eventf(p, nil, corev1.EventTypeWarning, reason, "Import", format, args...)
	}
}

func (im *Importer) requeue() time.Duration {
	if im.Requeue <= 0 {
		return 2 * time.Second
	}
	return im.Requeue
}
