package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/controllers/inventory"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// TestDevUpListsMembersAsClusterProfiles runs `kfed dev up --inventory
// clusterprofile` (light, for speed): the three members are ClusterProfiles
// with their place as properties, ControlPlaneHealthy and the kfed-dev
// access provider, kfed reaches each through the exec plugin `kfed dev
// credential` and the provider file it wrote, without a kubeconfig Secret,
// and every member's CoreDNS answers the demo Service with the three
// members' addresses.
func TestDevUpListsMembersAsClusterProfiles(t *testing.T) {
	dir, p, output := startDevUp(t, "--inventory", "clusterprofile", "--light", "--lb-base", strconv.Itoa(framework.ClaimLBBase(t, 3)))
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	fed, err := client.New(cfg, client.Options{Scheme: framework.NewScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	members := devenv.Members(3)
	for _, m := range members {
		var prof inventoryv1alpha1.ClusterProfile
		if err := fed.Get(ctx, client.ObjectKey{Namespace: devenv.ProfileNamespace, Name: m.Name}, &prof); err != nil {
			t.Fatal(err)
		}
		got := []string{prof.Spec.ClusterManager.Name, prof.Property(inventory.PropertyRegion), prof.Property(inventory.PropertyZone),
			string(meta.FindStatusCondition(prof.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy).Status)}
		if want := []string{devenv.ClusterManager, m.Region, strings.Join(m.Zones, ","), "True"}; !slices.Equal(got, want) {
			t.Errorf("profile %s: manager, region, zone, healthy = %q, want %q", m.Name, got, want)
		}
		if aps := prof.Status.AccessProviders; len(aps) != 1 || aps[0].Name != devenv.AccessProvider || aps[0].Cluster.Server == "" {
			t.Errorf("profile %s: access providers %+v, want %s with the member's server", m.Name, aps, devenv.AccessProvider)
		}
		var c kfedv1alpha1.Cluster
		if err := fed.Get(ctx, client.ObjectKey{Name: m.Name}, &c); err != nil {
			t.Fatal(err)
		}
		if c.Spec.ClusterProfileRef == nil || c.Spec.KubeconfigSecretRef.Name != "" ||
			!meta.IsStatusConditionTrue(c.Status.Conditions, kfedv1alpha1.ClusterReady) {
			t.Errorf("cluster %s: spec %+v, conditions %+v; want Ready through its profile, no kubeconfig Secret", m.Name, c.Spec, c.Status.Conditions)
		}
	}
	var secrets corev1.SecretList
	if err := fed.List(ctx, &secrets, client.InNamespace(kfedv1alpha1.DefaultNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		t.Errorf("kfed dev up made Secret %s/%s for an inventory member", s.Namespace, s.Name)
	}
	acc, err := access.Load(filepath.Join(dir, devenv.ProviderFile))
	if err != nil {
		t.Fatal(err)
	}
	if e := acc.Providers[0].ExecConfig; !strings.HasSuffix(e.Command, "kfed") || !slices.Equal(e.Args[:2], []string{"dev", "credential"}) {
		t.Errorf("provider file runs %s %v, want kfed dev credential", e.Command, e.Args)
	}

	env := fedtest.ReadEnvFile(t, filepath.Join(dir, "env"))
	demo := "demo.default." + env["KFED_FEDERATION"] + ".svc." + env["KFED_DOMAIN"] + "."
	for i := 1; i <= 3; i++ {
		framework.Eventually(t, 20*time.Second, func(context.Context) error {
			r, err := fedtest.Query(env["KFED_DNS_CLUSTER_"+strconv.Itoa(i)], "udp", demo, dns.TypeA)
			if err != nil {
				return err
			}
			if a := fedtest.AnswerStrings(r); len(a) != 3 {
				return fmt.Errorf("cluster-%d's CoreDNS answers %s with %v, want three addresses", i, demo, a)
			}
			return nil
		})
	}

	stopDevUp(t, dir, p, output)
}
