package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/controllers/inventory"
	"github.com/kfed-io/kfed/controllers/manager"
)

// With DevOptions.Inventory set to kfedv1alpha1.InventoryClusterProfile, the dev
// bed lists its members as ClusterProfiles (the Cluster Inventory API)
// instead of joining them: each reached through the access provider
// AccessProvider, an exec plugin that reads the member's token from the
// Secret TokenNamespace/<member> in the control plane.
const (
	// ProfileNamespace holds the dev bed's ClusterProfiles.
	ProfileNamespace = "kfed-fleet"
	// TokenNamespace holds a Secret per member (key "token"): a token of
	// the member's ServiceAccount kfed-system/kfed-member.
	TokenNamespace = "kfed-fleet-tokens"
	// AccessProvider names the dev bed's access provider.
	AccessProvider = "kfed-dev"
	// ProviderFile is DIR's access provider file, as kfed-controller's
	// --clusterprofile-provider-file reads it.
	ProviderFile = "clusterprofile-providers.json"
	// ClusterManager is the manager the dev bed's profiles name.
	ClusterManager = "kfed-dev"
)

// listProfiles lists every member in the inventory: a ServiceAccount in the
// member bound to cluster-admin (a dev bed), its token in a Secret of
// TokenNamespace, and a ClusterProfile in ProfileNamespace with the
// member's region and zones as properties, ControlPlaneHealthy, and the
// access provider naming the member's API server and the member for the
// plugin.
func listProfiles(ctx context.Context, fed client.Client, members []*Cluster) error {
	// kfed-system too, which kfed join would have made: kfed's leases and
	// reports live there.
	for _, ns := range []string{ProfileNamespace, TokenNamespace, kfedv1alpha1.DefaultNamespace} {
		if err := fed.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	for _, m := range members {
		token, err := memberToken(ctx, m)
		if err != nil {
			return fmt.Errorf("a token for %s: %w", m.Name, err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TokenNamespace, Name: m.Name},
			Data: map[string][]byte{"token": []byte(token)}}
		if err := fed.Create(ctx, secret); err != nil {
			return fmt.Errorf("storing the token of %s: %w", m.Name, err)
		}
		if err := createProfile(ctx, fed, m); err != nil {
			return fmt.Errorf("listing %s in the inventory: %w", m.Name, err)
		}
	}
	return nil
}

// memberToken makes the ServiceAccount kfed-system/kfed-member in m, bound
// to cluster-admin, and returns a token of it valid for a year.
func memberToken(ctx context.Context, m *Cluster) (string, error) {
	cs, err := kubernetes.NewForConfig(m.Config)
	if err != nil {
		return "", err
	}
	const ns, name = "kfed-system", "kfed-member"
	creates := []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range creates {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(365 * 24 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// createProfile writes m's ClusterProfile and its status.
func createProfile(ctx context.Context, fed client.Client, m *Cluster) error {
	p := &inventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: ProfileNamespace, Name: m.Name,
			Labels: map[string]string{inventoryv1alpha1.LabelClusterManager: ClusterManager}},
		Spec: inventoryv1alpha1.ClusterProfileSpec{DisplayName: m.Name, ClusterManager: inventoryv1alpha1.ClusterManager{Name: ClusterManager}},
	}
	if err := fed.Create(ctx, p); err != nil {
		return err
	}
	exec, err := json.Marshal(map[string]string{"clusterName": m.Name})
	if err != nil {
		return err
	}
	p.Status = inventoryv1alpha1.ClusterProfileStatus{
		Conditions: []metav1.Condition{{Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: metav1.ConditionTrue,
			Reason: "Healthy", Message: "kfed dev up started its API server", LastTransitionTime: metav1.Now()}},
		Properties: []inventoryv1alpha1.Property{
			{Name: inventory.PropertyRegion, Value: m.Region},
			{Name: inventory.PropertyZone, Value: strings.Join(m.Zones, ",")},
		},
		AccessProviders: []inventoryv1alpha1.AccessProvider{{Name: AccessProvider, Cluster: clientcmdv1.Cluster{
			Server: m.URL, CertificateAuthorityData: m.Config.CAData,
			Extensions: []clientcmdv1.NamedExtension{{Name: inventoryv1alpha1.ExecExtension, Extension: runtime.RawExtension{Raw: exec}}},
		}}},
	}
	// The controller is not running yet: no finalizer races this write.
	return fed.Status().Update(ctx, p)
}

// writeProviderFile writes DIR/ProviderFile, which maps AccessProvider to
// the plugin command (DevOptions.CredentialPlugin: the command, then its
// arguments; not empty) with the control plane's kubeconfig and
// TokenNamespace as its arguments, and returns it parsed.
func writeProviderFile(dir, kubeconfig string, plugin []string) (*access.Config, error) {
	args := append(slices.Clone(plugin[1:]),
		"--kubeconfig", kubeconfig, "--context", ControlPlaneName, "--namespace", TokenNamespace)
	c := access.Config{Providers: []access.Provider{{Name: AccessProvider, ExecConfig: &clientcmdapi.ExecConfig{
		APIVersion: clientauthv1.SchemeGroupVersion.String(), Command: plugin[0], Args: args,
		ProvideClusterInfo: true, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}}}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ProviderFile), data, 0o644); err != nil {
		return nil, err
	}
	return access.Parse(data)
}

// inventoryOptions are the controller's with an inventory of the kind
// DevOptions.Inventory names: the dev bed's profiles, through its provider
// file, parsed as providers.
func inventoryOptions(kind string, providers *access.Config) manager.InventoryOptions {
	if kind == "" {
		return manager.InventoryOptions{}
	}
	return manager.InventoryOptions{Inventory: kind, InventoryNamespace: ProfileNamespace, Access: providers}
}

// ExecCredential is what the dev bed's credential plugin prints for
// KUBERNETES_EXEC_INFO execInfo: the token in the Secret
// namespace/<clusterName> of the cluster c reaches, clusterName being what
// the profile's exec extension says (spec.cluster.config).
func ExecCredential(ctx context.Context, c kubernetes.Interface, namespace string, execInfo []byte) (*clientauthv1.ExecCredential, error) {
	var info clientauthv1.ExecCredential
	if err := json.Unmarshal(execInfo, &info); err != nil {
		return nil, fmt.Errorf("reading KUBERNETES_EXEC_INFO: %w", err)
	}
	if info.Spec.Cluster == nil || len(info.Spec.Cluster.Config.Raw) == 0 {
		return nil, errors.New("no spec.cluster.config: the plugin needs provideClusterInfo and the profile's exec extension")
	}
	var cluster struct {
		ClusterName string `json:"clusterName"`
	}
	if err := json.Unmarshal(info.Spec.Cluster.Config.Raw, &cluster); err != nil || cluster.ClusterName == "" {
		return nil, fmt.Errorf("spec.cluster.config %s names no clusterName", info.Spec.Cluster.Config.Raw)
	}
	s, err := c.CoreV1().Secrets(namespace).Get(ctx, cluster.ClusterName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	token := string(s.Data["token"])
	if token == "" {
		return nil, fmt.Errorf("secret %s/%s has no token", namespace, cluster.ClusterName)
	}
	return &clientauthv1.ExecCredential{
		TypeMeta: metav1.TypeMeta{APIVersion: clientauthv1.SchemeGroupVersion.String(), Kind: "ExecCredential"},
		Status:   &clientauthv1.ExecCredentialStatus{Token: token},
	}, nil
}
