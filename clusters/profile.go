package clusters

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/access"
)

// ReasonNoAccessProvider is the Ready condition's reason for a Cluster of a
// ClusterProfile that kfed cannot reach: the profile is gone, or offers no
// access provider kfed has a plugin for.
const ReasonNoAccessProvider = "NoAccessProvider"

// LoadMemberConfig is a member's client config: from its kubeconfig Secret
// for a joined cluster, or, for a cluster taken from a ClusterProfile, from
// the profile's access provider and the exec plugin acc names for it (nil
// when kfed runs without an inventory). On error it also returns the
// condition reason that describes it.
func LoadMemberConfig(ctx context.Context, c client.Client, cluster *kfedv1alpha1.Cluster, acc *access.Config) (*rest.Config, string, error) {
	ref := cluster.Spec.ClusterProfileRef
	if ref == nil {
		return LoadRESTConfig(ctx, c, cluster)
	}
	if acc == nil {
		return nil, ReasonNoAccessProvider, fmt.Errorf("cluster %s is reached through ClusterProfile %s/%s, and no access provider file is configured (--clusterprofile-provider-file)",
			cluster.Name, ref.Namespace, ref.Name)
	}
	var p inventoryv1alpha1.ClusterProfile
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &p); err != nil {
		return nil, ReasonNoAccessProvider, fmt.Errorf("reading ClusterProfile %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	cfg, err := acc.RESTConfig(&p)
	if err != nil {
		return nil, ReasonNoAccessProvider, err
	}
	Unthrottled(cfg)
	return cfg, "", nil
}

// controlPlaneUnhealthy says why the inventory takes cluster out of the
// federation ("" when it does not): its ClusterProfile's ControlPlaneHealthy
// condition is False. Unlike a failed probe this counts at once: the
// inventory has already made up its mind.
func controlPlaneUnhealthy(ctx context.Context, c client.Client, cluster *kfedv1alpha1.Cluster) string {
	ref := cluster.Spec.ClusterProfileRef
	if ref == nil {
		return ""
	}
	var p inventoryv1alpha1.ClusterProfile
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &p); err != nil {
		return "" // LoadMemberConfig reports it
	}
	cond := meta.FindStatusCondition(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
	if cond == nil || cond.Status != metav1.ConditionFalse {
		return ""
	}
	return fmt.Sprintf("ClusterProfile %s/%s says its control plane is not healthy (%s: %s)", ref.Namespace, ref.Name, cond.Reason, cond.Message)
}

// profileToCluster maps a ClusterProfile to the Clusters that name it.
func profileToCluster(c client.Client) func(context.Context, client.Object) []ctrl.Request {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		var list kfedv1alpha1.ClusterList
		if err := c.List(ctx, &list, client.MatchingLabels{kfedv1alpha1.LabelInventory: kfedv1alpha1.InventoryClusterProfile}); err != nil {
			return nil
		}
		var out []ctrl.Request
		for _, cl := range list.Items {
			if r := cl.Spec.ClusterProfileRef; r != nil && r.Namespace == o.GetNamespace() && r.Name == o.GetName() {
				out = append(out, ctrl.Request{NamespacedName: client.ObjectKey{Name: cl.Name}})
			}
		}
		return out
	}
}

// LoadRESTConfig reads a member's client config from its kubeconfig Secret.
// On error it also returns the condition reason that describes it.
func LoadRESTConfig(ctx context.Context, c client.Client, cluster *kfedv1alpha1.Cluster) (*rest.Config, string, error) {
	if cluster.Spec.ClusterProfileRef != nil {
		return LoadMemberConfig(ctx, c, cluster, nil) // says it needs an access provider file
	}
	ref := cluster.Spec.KubeconfigSecretRef
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return nil, kfedv1alpha1.ReasonSecretMissing, fmt.Errorf("reading kubeconfig secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	data, ok := s.Data[ref.KubeconfigKey()]
	if !ok {
		return nil, kfedv1alpha1.ReasonKubeconfigInvalid, fmt.Errorf("secret %s/%s has no key %q", ref.Namespace, ref.Name, ref.KubeconfigKey())
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, kfedv1alpha1.ReasonKubeconfigInvalid, fmt.Errorf("kubeconfig in secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	Unthrottled(cfg)
	return cfg, "", nil
}

// Unthrottled turns off client-go's default client-side limit of 5 requests
// a second when cfg sets none, as controller-runtime does for its own
// configs: API Priority and Fairness on the server is the limit that counts,
// and 5/s would make one reconcile of 1,000 Services take minutes.
func Unthrottled(cfg *rest.Config) {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
}
