package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// TestANewKubeconfigInItsSecretTakesEffect: a member's token is revoked
// and a new one written into the kubeconfig Secret, by hand, as `kfed
// check` suggests, with nothing else changed; kfed acts in the member with
// the new one. The controller used to reload a member only when its
// Cluster changed, so it went on with the revoked token; and `kfed join
// --renew`, which marks the Cluster too, lost the same race when the
// Cluster's event came before the cache held the new Secret (found as
// Unauthorized errors in the chart test under load).
func TestANewKubeconfigInItsSecretTakesEffect(t *testing.T) {
	f := framework.Start(t, framework.Members(1), framework.LoadBalancer())
	fed := f.Client("federation")
	ctx := context.Background()
	m := f.Members[0]
	member := f.Client(m.Name)
	f.Apply(m.Name, []string{"deploy/member/rbac.yaml"})

	// The member's kubeconfig as kfed join --service-account writes it: its
	// context alone, with a token of kfed-system/kfed-member.
	withToken := func(token string) *clientcmdapi.Config {
		raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		raw.AuthInfos[m.Name] = &clientcmdapi.AuthInfo{Token: token}
		raw.CurrentContext = m.Name
		if err := clientcmdapi.MinifyConfig(raw); err != nil {
			t.Fatal(err)
		}
		return raw
	}
	old := withToken(f.Token(m.Name, "kfed-system", "kfed-member"))
	if _, err := clusters.Join(ctx, fed, clusters.JoinOptions{Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: old}); err != nil {
		t.Fatal(err)
	}
	f.StartController(manager.Options{})
	one := fedtest.FederatedService("default", "one")
	if err := fed.Create(ctx, one); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(one), kfedv1alpha1.ConditionPublished, "True", m.Name)

	oldCfg, err := clientcmd.NewDefaultClientConfig(*old, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	fedtest.RevokeTokens(t, member, "kfed-system", "kfed-member", oldCfg)

	// The new kubeconfig goes into the Secret; the Cluster is not touched.
	data, err := clientcmd.Write(*withToken(f.Token(m.Name, "kfed-system", "kfed-member")))
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: clusters.SecretName(m.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data[kfedv1alpha1.DefaultKubeconfigKey] = data
	if err := fed.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	two := fedtest.FederatedService("default", "two")
	if err := fed.Create(ctx, two); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(two), kfedv1alpha1.ConditionPublished, "True", m.Name)
	var copied corev1.Service
	if err := member.Get(ctx, client.ObjectKeyFromObject(two), &copied); err != nil {
		t.Errorf("no copy of default/two in %s: %v", m.Name, err)
	}
}
