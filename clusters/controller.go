package clusters

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/access"
)

// +kubebuilder:rbac:groups=kfed.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=kfed.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=kfed-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=kfed.io,resources=healthreports,verbs=get;list;watch

// Controller probes each member's /readyz and keeps its Cluster's Ready and
// Offline conditions. A cluster turns Offline only after FailureThreshold
// failed probes in a row, so one slow answer does not flap it; one success
// brings it back.
type Controller struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Interval between probes of one cluster; 10 s when zero.
	Interval time.Duration
	// Timeout of one probe; 5 s when zero.
	Timeout time.Duration
	// FailureThreshold is how many failed probes in a row make a cluster
	// Offline; 3 when zero.
	FailureThreshold int
	// Access reaches the clusters taken from ClusterProfiles; nil when kfed
	// runs without an inventory.
	Access *access.Config

	mu       sync.Mutex
	failures map[string]int // cluster name → failed probes in a row
}

// SetupWithManager registers the controller; Secrets are watched so that a
// fixed kubeconfig takes effect at once.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cluster").
		// Not on the controller's own status writes: a probe that fails
		// at once would otherwise probe again at each write of its
		// failure count, tens of times a second while a member is down.
		// The probe interval requeues every Cluster.
		For(&kfedv1alpha1.Cluster{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(ClustersUsingSecret(mgr.GetClient())))
	// A checker appearing or going may take its cluster over its seats; a
	// control plane without the HealthReport CRD has no checkers.
	if _, err := mgr.GetRESTMapper().RESTMapping(kfedv1alpha1.GroupVersion.WithKind("HealthReport").GroupKind()); err == nil {
		b = b.Watches(&kfedv1alpha1.HealthReport{}, handler.EnqueueRequestsFromMapFunc(clusterOfNamespace(mgr.GetClient())),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}))
	}
	if c.Access != nil {
		// A profile's ControlPlaneHealthy going False counts at once.
		b = b.Watches(&inventoryv1alpha1.ClusterProfile{}, handler.EnqueueRequestsFromMapFunc(profileToCluster(c.Client)))
	}
	return b.Complete(c)
}

// ClustersUsingSecret maps a Secret to the Clusters whose kubeconfig it
// holds: the one kfed join wrote, or one a user wrote and pointed a
// Cluster at, which carries no label of kfed's.
func ClustersUsingSecret(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		var list kfedv1alpha1.ClusterList
		if err := c.List(ctx, &list); err != nil {
			// Nothing to map: each Cluster's own events still load its
			// Secret.
			return nil
		}
		var reqs []ctrl.Request
		for _, cl := range list.Items {
			if ref := cl.Spec.KubeconfigSecretRef; ref.Namespace == o.GetNamespace() && ref.Name == o.GetName() {
				reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Name: cl.Name}})
			}
		}
		return reqs
	}
}

// Reconcile probes one cluster and records what it found.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cluster kfedv1alpha1.Cluster
	if err := c.Client.Get(ctx, req.NamespacedName, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	before := cluster.DeepCopy()

	cfg, reason, err := LoadMemberConfig(ctx, c.Client, &cluster, c.Access)
	var version string
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, c.timeout())
		version, err = Probe(pctx, cfg)
		cancel()
		reason = kfedv1alpha1.ReasonProbeFailed
	}
	if why := controlPlaneUnhealthy(ctx, c.Client, &cluster); why != "" {
		err, reason = errors.New(why), kfedv1alpha1.ReasonControlPlaneUnhealthy
	}
	v := c.verdict(cluster.Name, reason, err)
	if version != "" {
		cluster.Status.KubernetesVersion = version
		c.locate(ctx, &cluster, cfg)
	}
	c.place(&cluster)
	c.apply(&cluster, v)
	drainCondition(&cluster)
	over, err := checkerSeats(ctx, c.Client, &cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed := !equalStatus(before, &cluster); changed {
		if err := c.Client.Status().Patch(ctx, &cluster, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("updating status of cluster %s: %w", cluster.Name, err)
		}
		c.event(before, &cluster)
		c.drainEvent(before, &cluster)
		seatsEvent(c.Recorder, before, &cluster, over)
	}
	return ctrl.Result{RequeueAfter: c.interval()}, nil
}

// verdict is what one probe means for a cluster's conditions.
type verdict struct {
	ready   metav1.ConditionStatus
	offline metav1.ConditionStatus
	reason  string
	message string
}

// verdict turns a probe result into conditions. Configuration errors (no
// Secret, a bad kubeconfig) count at once: waiting cannot fix them.
func (c *Controller) verdict(name, reason string, err error) verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures == nil {
		c.failures = map[string]int{}
	}
	if err == nil {
		delete(c.failures, name)
		return verdict{metav1.ConditionTrue, metav1.ConditionFalse, kfedv1alpha1.ReasonProbeSucceeded, "API server answers /readyz"}
	}
	if reason != kfedv1alpha1.ReasonProbeFailed {
		return verdict{metav1.ConditionFalse, metav1.ConditionTrue, reason, err.Error()}
	}
	c.failures[name]++
	n, threshold := c.failures[name], c.threshold()
	msg := fmt.Sprintf("%d failed probe(s) in a row (threshold %d): %v", n, threshold, err)
	if n < threshold {
		return verdict{"", "", reason, msg} // keep the conditions as they are
	}
	return verdict{metav1.ConditionFalse, metav1.ConditionTrue, reason, msg}
}

func (c *Controller) apply(cluster *kfedv1alpha1.Cluster, v verdict) {
	conds := &cluster.Status.Conditions
	gen := cluster.Generation
	if v.ready == "" {
		// Below the threshold: a cluster with no verdict yet is Unknown,
		// one with a verdict keeps it.
		if meta.FindStatusCondition(*conds, kfedv1alpha1.ClusterReady) == nil {
			meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterReady, Status: metav1.ConditionUnknown,
				Reason: kfedv1alpha1.ReasonPending, Message: v.message, ObservedGeneration: gen})
			meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterOffline, Status: metav1.ConditionUnknown,
				Reason: kfedv1alpha1.ReasonPending, Message: v.message, ObservedGeneration: gen})
		}
		return
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterReady, Status: v.ready,
		Reason: v.reason, Message: v.message, ObservedGeneration: gen})
	meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterOffline, Status: v.offline,
		Reason: v.reason, Message: v.message, ObservedGeneration: gen})
	cluster.Status.ObservedGeneration = gen
}

// locate keeps status.region and status.zones in line with the member's
// nodes while the spec leaves them empty, so that its zones follow the
// nodes within one probe interval. A failed read keeps what was found last.
func (c *Controller) locate(ctx context.Context, cluster *kfedv1alpha1.Cluster, cfg *rest.Config) {
	if cluster.Spec.Region != "" && len(cluster.Spec.Zones) > 0 {
		cluster.Status.Region, cluster.Status.Zones = "", nil
		return
	}
	lctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	region, zones, err := NodeTopology(lctx, cfg)
	if err != nil {
		return
	}
	cluster.Status.Region, cluster.Status.Zones = region, zones
}

// place keeps status.location at where the cluster is (Cluster.Coordinates:
// its spec, else its region's place in kfed's table of cloud regions), for
// kubectl's columns and kfed status. Readers that order by distance ask
// Coordinates themselves, so they need not wait for this write.
func (c *Controller) place(cluster *kfedv1alpha1.Cluster) {
	cluster.Status.Location = nil
	if p, ok, _ := cluster.Coordinates(); ok {
		cluster.Status.Location = kfedv1alpha1.NewGeoLocation(p)
	}
}

// event tells users about a change of Ready's status or reason.
func (c *Controller) event(before, after *kfedv1alpha1.Cluster) {
	now := meta.FindStatusCondition(after.Status.Conditions, kfedv1alpha1.ClusterReady)
	if c.Recorder == nil || now == nil || now.Status == metav1.ConditionUnknown {
		return
	}
	if was := meta.FindStatusCondition(before.Status.Conditions, kfedv1alpha1.ClusterReady); was != nil &&
		was.Status == now.Status && was.Reason == now.Reason {
		return
	}
	if now.Status == metav1.ConditionTrue {
		c.Recorder.Eventf(after, nil, corev1.EventTypeNormal, "ClusterReady", "Probe", "cluster %s is Ready", after.Name)
		return
	}
	c.Recorder.Eventf(after, nil, corev1.EventTypeWarning, "ClusterOffline", "Probe", "cluster %s is Offline: %s", after.Name, now.Message)
}

// drainCondition keeps the Drained condition in line with spec.drained:
// True while drained, False (Undrained) once a drained cluster is back,
// absent for one never drained.
func drainCondition(cluster *kfedv1alpha1.Cluster) {
	conds := &cluster.Status.Conditions
	switch {
	case cluster.Spec.Drained:
		meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterDrained, Status: metav1.ConditionTrue,
			Reason: kfedv1alpha1.ReasonDrained, ObservedGeneration: cluster.Generation,
			Message: "out of every answer (kfed drain), but for names no other cluster can answer; its copies and workloads stay"})
	case meta.FindStatusCondition(*conds, kfedv1alpha1.ClusterDrained) != nil:
		meta.SetStatusCondition(conds, metav1.Condition{Type: kfedv1alpha1.ClusterDrained, Status: metav1.ConditionFalse,
			Reason: kfedv1alpha1.ReasonUndrained, ObservedGeneration: cluster.Generation,
			Message: "back in every answer (kfed undrain)"})
	}
}

// drainEvent tells users that a cluster was drained or undrained.
func (c *Controller) drainEvent(before, after *kfedv1alpha1.Cluster) {
	now := meta.FindStatusCondition(after.Status.Conditions, kfedv1alpha1.ClusterDrained)
	if c.Recorder == nil || now == nil {
		return
	}
	if was := meta.FindStatusCondition(before.Status.Conditions, kfedv1alpha1.ClusterDrained); was != nil && was.Status == now.Status {
		return
	}
	c.Recorder.Eventf(after, nil, corev1.EventTypeNormal, now.Reason, "Drain", "cluster %s is %s", after.Name, strings.ToLower(now.Reason))
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.failures, name)
}

func (c *Controller) interval() time.Duration { return cmp.Or(c.Interval, 10*time.Second) }
func (c *Controller) timeout() time.Duration  { return cmp.Or(c.Timeout, 5*time.Second) }
func (c *Controller) threshold() int {
	if c.FailureThreshold <= 0 {
		return 3
	}
	return c.FailureThreshold
}

// equalStatus compares what the controller writes, ignoring transition
// times SetStatusCondition keeps for unchanged statuses.
func equalStatus(a, b *kfedv1alpha1.Cluster) bool {
	if a.Status.KubernetesVersion != b.Status.KubernetesVersion || a.Status.ObservedGeneration != b.Status.ObservedGeneration ||
		a.Status.Region != b.Status.Region || !slices.Equal(a.Status.Zones, b.Status.Zones) ||
		!sameLocation(a.Status.Location, b.Status.Location) ||
		len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for i := range a.Status.Conditions {
		x, y := a.Status.Conditions[i], b.Status.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

func sameLocation(a, b *kfedv1alpha1.GeoLocation) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
