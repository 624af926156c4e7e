package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// AccessProviderName is the access provider kfed's ClusterProfiles offer:
// the member's API server and CA, with no credentials. A reader maps it to a
// plugin of its own in its provider file.
const AccessProviderName = "kfed"

// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles/status,verbs=get;update;patch

// Exporter keeps a ClusterProfile in Namespace for each cluster joined with
// kfed join, so that inventory readers (Argo CD, Kueue, multicluster-runtime)
// see kfed's fleet, and removes it when the cluster is unjoined.
type Exporter struct {
	Fed client.Client
	// Namespace holds the profiles kfed writes.
	Namespace string
}

// SetupWithManager registers the Exporter.
func (ex *Exporter) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("inventory-exporter").
		For(&kfedv1alpha1.Cluster{}).
		// A profile changed or deleted by someone else is put back.
		Watches(&inventoryv1alpha1.ClusterProfile{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			if o.GetNamespace() != ex.Namespace || o.GetLabels()[inventoryv1alpha1.LabelClusterManager] != ManagerName {
				return nil
			}
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
		})).
		Complete(ex)
}

// Reconcile writes or removes the profile of one Cluster.
func (ex *Exporter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c kfedv1alpha1.Cluster
	err := ex.Fed.Get(ctx, req.NamespacedName, &c)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	key := client.ObjectKey{Namespace: ex.Namespace, Name: req.Name}
	var p inventoryv1alpha1.ClusterProfile
	perr := ex.Fed.Get(ctx, key, &p)
	if perr != nil && !apierrors.IsNotFound(perr) {
		return ctrl.Result{}, perr
	}
	exists := perr == nil
	if exists && p.Labels[inventoryv1alpha1.LabelClusterManager] != ManagerName {
		return ctrl.Result{}, nil // another manager's profile: never touched
	}
	if apierrors.IsNotFound(err) || c.DeletionTimestamp != nil || c.Spec.ClusterProfileRef != nil {
		if exists {
			return ctrl.Result{}, client.IgnoreNotFound(ex.Fed.Delete(ctx, &p))
		}
		return ctrl.Result{}, nil
	}
	status := ex.profileStatus(ctx, &c)
	if !exists {
		p = inventoryv1alpha1.ClusterProfile{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: ex.Namespace, Labels: map[string]string{
				inventoryv1alpha1.LabelClusterManager: ManagerName,
				kfedv1alpha1.LabelManagedBy:           kfedv1alpha1.ManagedBy,
				kfedv1alpha1.LabelCluster:             c.Name,
			}},
			Spec: inventoryv1alpha1.ClusterProfileSpec{DisplayName: c.Name, ClusterManager: inventoryv1alpha1.ClusterManager{Name: ManagerName}},
		}
		if err := ex.Fed.Create(ctx, &p); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating ClusterProfile %s: %w", key, err)
		}
	}
	before := p.Status.DeepCopy()
	conds := p.Status.Conditions
	for _, cond := range status.Conditions {
		cond.ObservedGeneration = p.Generation
		meta.SetStatusCondition(&conds, cond)
	}
	p.Status = status
	p.Status.Conditions = conds
	if sameStatus(before, &p.Status) {
		return ctrl.Result{}, nil
	}
	if err := ex.Fed.Status().Update(ctx, &p); err != nil {
		return ctrl.Result{}, fmt.Errorf("updating ClusterProfile %s: %w", key, err)
	}
	return ctrl.Result{}, nil
}

// profileStatus is what the profile of joined cluster c says: its health
// (the Cluster's Ready condition), its version and place, and where its API
// server is.
func (ex *Exporter) profileStatus(ctx context.Context, c *kfedv1alpha1.Cluster) inventoryv1alpha1.ClusterProfileStatus {
	healthy := metav1.Condition{Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: metav1.ConditionUnknown,
		Reason: kfedv1alpha1.ReasonPending, Message: "kfed has not probed the cluster yet"}
	if r := meta.FindStatusCondition(c.Status.Conditions, kfedv1alpha1.ClusterReady); r != nil {
		healthy.Status, healthy.Reason, healthy.Message = r.Status, r.Reason, r.Message
	}
	st := inventoryv1alpha1.ClusterProfileStatus{
		Conditions: []metav1.Condition{healthy, {Type: inventoryv1alpha1.ConditionJoined, Status: metav1.ConditionTrue,
			Reason: "Joined", Message: "joined with kfed join"}},
		Version: inventoryv1alpha1.ClusterVersion{Kubernetes: c.Status.KubernetesVersion},
	}
	region, zones := c.Location()
	add := func(name, value string) {
		if value != "" {
			st.Properties = append(st.Properties, inventoryv1alpha1.Property{Name: name, Value: value})
		}
	}
	add(PropertyRegion, region)
	add(PropertyZone, strings.Join(zones, ","))
	if p, ok, _ := c.Coordinates(); ok {
		add(PropertyLocation, p.String())
	}
	if server, ca := ex.apiServer(ctx, c); server != "" {
		st.AccessProviders = []inventoryv1alpha1.AccessProvider{{Name: AccessProviderName,
			Cluster: clientcmdv1.Cluster{Server: server, CertificateAuthorityData: ca}}}
	}
	return st
}

// apiServer reads the member's server and CA from its kubeconfig; the
// credentials in it never leave the Secret.
func (ex *Exporter) apiServer(ctx context.Context, c *kfedv1alpha1.Cluster) (string, []byte) {
	ref := c.Spec.KubeconfigSecretRef
	var s corev1.Secret
	if err := ex.Fed.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return "", nil
	}
	cfg, err := clientcmd.Load(s.Data[ref.KubeconfigKey()])
	if err != nil {
		return "", nil
	}
	ctxName := cfg.CurrentContext
	kc := cfg.Contexts[ctxName]
	if kc == nil {
		return "", nil
	}
	cl := cfg.Clusters[kc.Cluster]
	if cl == nil {
		return "", nil
	}
	return cl.Server, cl.CertificateAuthorityData
}

// sameStatus compares what the Exporter writes, ignoring the transition
// and observation times.
func sameStatus(a, b *inventoryv1alpha1.ClusterProfileStatus) bool {
	if a.Version != b.Version || !slices.EqualFunc(a.Properties, b.Properties, func(x, y inventoryv1alpha1.Property) bool {
		return x.Name == y.Name && x.Value == y.Value
	}) || len(a.AccessProviders) != len(b.AccessProviders) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.AccessProviders {
		x, y := a.AccessProviders[i], b.AccessProviders[i]
		if x.Name != y.Name || x.Cluster.Server != y.Cluster.Server || string(x.Cluster.CertificateAuthorityData) != string(y.Cluster.CertificateAuthorityData) {
			return false
		}
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
