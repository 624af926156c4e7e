package copies

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/clusters/registry"
)

// +kubebuilder:rbac:groups=kfed.io,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=kfed.io,resources=clusters/finalizers,verbs=update

// MemberCleanup removes the objects kfed created in a member cluster that is
// being unjoined (shards, copies, imports: every kind a controller declared
// with registry.Registry.Writes), and lets go of the ones it adopted. A member that cannot
// be reached is retried for GiveUpAfter, then let go with a Warning Event:
// unjoining must not hang forever on a cluster that is gone.
type MemberCleanup struct {
	Fed        client.Client
	Recorder   events.EventRecorder
	Federation string
	// Members holds the kinds kfed's controllers write in members
	// (registry.Registry.Written).
	Members *registry.Registry
	// GiveUpAfter bounds the retries for an unreachable member; 2 minutes
	// when zero.
	GiveUpAfter time.Duration
	// Access reaches the clusters taken from ClusterProfiles; nil when kfed
	// runs without an inventory.
	Access *access.Config
}

// SetupWithManager registers the cleanup as a controller of Clusters.
func (m *MemberCleanup) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("member-cleanup").
		For(&kfedv1alpha1.Cluster{}).
		Complete(m)
}

// Reconcile adds the finalizer to live Clusters and runs the cleanup for
// deleted ones.
func (m *MemberCleanup) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c kfedv1alpha1.Cluster
	if err := m.Fed.Get(ctx, req.NamespacedName, &c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp == nil {
		if controllerutil.ContainsFinalizer(&c, kfedv1alpha1.FinalizerMember) {
			return ctrl.Result{}, nil
		}
		patch := client.MergeFrom(c.DeepCopy())
		controllerutil.AddFinalizer(&c, kfedv1alpha1.FinalizerMember)
		return ctrl.Result{}, m.Fed.Patch(ctx, &c, patch)
	}
	if !controllerutil.ContainsFinalizer(&c, kfedv1alpha1.FinalizerMember) {
		return ctrl.Result{}, nil
	}
	if err := m.cleanup(ctx, &c); err != nil {
		giveUp := m.GiveUpAfter
		if giveUp == 0 {
			giveUp = 2 * time.Minute
		}
		if time.Since(c.DeletionTimestamp.Time) < giveUp {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
		if m.Recorder != nil {
			m.Recorder.Eventf(&c, nil, corev1.EventTypeWarning, "ShardsLeftBehind", "Unjoin",
				"could not remove kfed's objects from cluster %s within %v; delete the objects labelled %s=%s there by hand: %v",
				c.Name, giveUp, kfedv1alpha1.LabelFederation, m.Federation, err)
		}
	}
	patch := client.MergeFrom(c.DeepCopy())
	controllerutil.RemoveFinalizer(&c, kfedv1alpha1.FinalizerMember)
	return ctrl.Result{}, client.IgnoreNotFound(m.Fed.Patch(ctx, &c, patch))
}

// cleanup talks to the member directly (the registry stops its cache once
// the Cluster is being deleted).
func (m *MemberCleanup) cleanup(ctx context.Context, c *kfedv1alpha1.Cluster) error {
	cfg, _, err := clusters.LoadMemberConfig(ctx, m.Fed, c, m.Access)
	if err != nil {
		return err
	}
	cfg.Timeout = 10 * time.Second
	member, err := client.New(cfg, client.Options{Scheme: m.Fed.Scheme()})
	if err != nil {
		return err
	}
	var errs []error
	for _, kind := range m.Members.Written() {
		list := kind.List.DeepCopyObject().(client.ObjectList)
		labels := client.MatchingLabels{kfedv1alpha1.LabelFederation: m.Federation}
		maps.Copy(labels, kind.Labels)
		if err := member.List(ctx, list, labels); meta.IsNoMatchError(err) {
			continue // the member does not serve the kind: kfed wrote none there
		} else if err != nil {
			errs = append(errs, fmt.Errorf("listing kfed's %T in %s: %w", kind.List, c.Name, err))
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok {
				continue
			}
			switch Classify(obj, obj.GetAnnotations()[kfedv1alpha1.AnnotationOrigin], m.Federation) {
			case Ours:
				if err := member.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
			case Adopted:
				if err := LetGo(ctx, member, obj); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}
