package deployments

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// A test bed's API servers are most of this package's CPU, so the tests
// whose beds are alike run one after another on one bed, each a subtest
// under its former name (-run 'DeploymentsOnOneBed/TestFederatedDeploymentCapacity$'
// runs one). Each runs its own controller with the options it always had,
// in namespaces of its own, deletes at its end what a later one could count
// (pods hold the node capacity the capacity test measures; DNSEndpoints
// reach the DNS sync of the providers test), and undoes its faults: a
// member unjoined is joined again, a member's API server stopped is started
// again, shrunk nodes grow back.

// TestDeploymentsOnOneBed: three members with load balancers and workloads
// (scheduler, controller manager, two KWOK nodes of 8 CPU each), joined.
// The member outage stops an API server: it runs last.
func TestDeploymentsOnOneBed(t *testing.T) {
	f := framework.Start(t, framework.Members(3), framework.Workloads(2, "8"), framework.LoadBalancer())
	f.JoinAll()
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *framework.Federation)
	}{
		{"TestFederatedDeployment", federatedDeployment},
		{"TestFederatedDeploymentWeightsReachTheProviders", federatedDeploymentWeightsReachTheProviders},
		{"TestFederatedDeploymentCapacity", federatedDeploymentCapacity},
		{"TestFederatedDeploymentMemberOutage", federatedDeploymentMemberOutage},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, f) })
	}
}

// TestBalancersOnOneBed: one member over two zones (four KWOK nodes of 4
// CPU), serving Balancers, with a load balancer. The member starts not
// joined: TestMemberWithoutBalancerAccessStillServesServices joins it with
// an identity of its own before its controller starts, and unjoins it at
// its end; the Balancer tests run on it joined as `kfed join` joins.
// TestBalancerInTheControlPlane counts only the control plane's objects, so
// what TestBalancerInAMember makes in the member stays there.
func TestBalancersOnOneBed(t *testing.T) {
	f := framework.Start(t, framework.Members(1), framework.Workloads(4, "4"),
		framework.Zones(fedtest.ZoneB, fedtest.ZoneC), framework.MemberCRDs(), framework.LoadBalancer())
	t.Run("TestMemberWithoutBalancerAccessStillServesServices", func(t *testing.T) {
		memberWithoutBalancerAccessStillServesServices(t, f)
	})
	f.JoinAll()
	t.Run("TestBalancerInAMember", func(t *testing.T) { balancerInAMember(t, f) })
	t.Run("TestBalancerInTheControlPlane", func(t *testing.T) { balancerInTheControlPlane(t, f) })
}

// startController runs kfed's controller with o until t ends; t's cleanups
// registered after it run while it still does.
func startController(t *testing.T, f *framework.Federation, o manager.Options) {
	t.Helper()
	t.Cleanup(f.StartController(o))
}

// deleteDeploymentsAtEnd deletes, when t ends, the control plane's
// Deployments in namespaces (kfed deletes their copies) and the Deployments
// the members still hold there (orphaned, adopted or their own), and waits
// until no pod is left there in any member: a pod holds node capacity a
// later subtest counts on. kfed's controller must still run.
func deleteDeploymentsAtEnd(t *testing.T, f *framework.Federation, namespaces ...string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		fed := f.Client("federation")
		for _, ns := range namespaces {
			if err := fed.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ns)); err != nil {
				t.Errorf("deleting the Deployments of %s: %v", ns, err)
			}
		}
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			for _, ns := range namespaces {
				var l appsv1.DeploymentList
				if err := fed.List(ctx, &l, client.InNamespace(ns)); err != nil {
					return err
				}
				if len(l.Items) > 0 {
					return fmt.Errorf("%d Deployments still in %s, the first %s", len(l.Items), ns, l.Items[0].Name)
				}
			}
			return nil
		})
		for _, m := range f.Members {
			for _, ns := range namespaces {
				if err := f.Client(m.Name).DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ns)); err != nil {
					t.Errorf("deleting the Deployments of %s in %s: %v", ns, m.Name, err)
				}
			}
		}
		framework.Eventually(t, 90*time.Second, func(ctx context.Context) error {
			for _, m := range f.Members {
				for _, ns := range namespaces {
					var pods corev1.PodList
					if err := f.Client(m.Name).List(ctx, &pods, client.InNamespace(ns)); err != nil {
						return err
					}
					if len(pods.Items) > 0 {
						return fmt.Errorf("%d pods still in %s in %s", len(pods.Items), ns, m.Name)
					}
				}
			}
			return nil
		})
	})
}

// rejoinAtEnd joins the member name again, as JoinAll joined it, when t
// ends, once kfed's controller has finished removing its Cluster: t
// unjoins it. kfed's controller must still run.
func rejoinAtEnd(t *testing.T, f *framework.Federation, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		fed := f.Client("federation")
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			if err := fed.Get(ctx, client.ObjectKey{Name: name}, &kfedv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("cluster %s is still there (%v)", name, err)
			}
			return nil
		})
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: clusters.SecretName(name)}}
		if err := fed.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			t.Fatalf("deleting the kubeconfig Secret of %s: %v", name, err)
		}
		raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		m := f.Cluster(name)
		if _, err := clusters.Join(ctx, fed, clusters.JoinOptions{Name: name, Region: m.Region, Zones: m.Zones, Kubeconfig: raw}); err != nil {
			t.Fatal(err)
		}
		fedtest.WantCondition(t, fed, name, kfedv1alpha1.ClusterReady, "True", 30*time.Second)
	})
}

// unjoinWithFullAccess gives kfed the kubeconfig JoinAll would give it for
// the member name, an identity that may remove kfed's objects there, and
// unjoins the member. kfed's controller must still run.
func unjoinWithFullAccess(t *testing.T, f *framework.Federation, name string) {
	t.Helper()
	ctx := context.Background()
	fed := f.Client("federation")
	raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	member, err := clusters.MemberKubeconfig(raw, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := clusters.RenewKubeconfig(ctx, fed, name, member); err != nil {
		t.Fatal(err)
	}
	if err := clusters.Unjoin(ctx, fed, name, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}
