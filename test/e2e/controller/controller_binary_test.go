package controller

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/test/framework"
)

// replica is one kfed-controller process.
type replica struct {
	cmd     *exec.Cmd
	proc    *process.Process
	metrics string
	log     *process.Output
}

// leads reports whether the replica logged that it took the lease.
func (r *replica) leads() bool {
	return strings.Contains(strings.ToLower(r.log.String()), "successfully acquired lease")
}

func startReplica(t *testing.T, bin, kubeconfig string) *replica {
	t.Helper()
	metrics, health := framework.FreeAddr(t), framework.FreeAddr(t)
	r := &replica{metrics: metrics}
	r.cmd = exec.Command(bin, "--kubeconfig", kubeconfig, "--context", "federation",
		"--federation", "fed", "--domain", "example.com",
		"--metrics-bind-address", metrics, "--health-probe-bind-address", health,
		"--cluster-probe-interval", "500ms")
	r.proc, r.log = framework.StartProcess(t, r.cmd, "kfed-controller "+metrics)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		return fedtest.GetOK(ctx, "http://"+health+"/healthz")
	})
	return r
}

// TestKfedControllerElectsALeaderServesMetricsAndFailsOver runs two
// kfed-controller processes with only the permissions deploy/ grants: the
// generated roles in the control plane, deploy/member/rbac.yaml in members.
func TestKfedControllerElectsALeaderServesMetricsAndFailsOver(t *testing.T) {
	f := framework.Start(t, framework.Members(2), framework.LoadBalancer(), framework.MemberCRDs())
	kubeconfig := leastPrivilegeKubeconfig(t, f)
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fed := f.Client("federation")
	ctx := context.Background()
	for _, m := range f.Members {
		if _, err := clusters.Join(ctx, fed, clusters.JoinOptions{Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: raw}); err != nil {
			t.Fatal(err)
		}
	}
	bin := framework.BuildCommand(t, "kfed-controller")
	a, b := startReplica(t, bin, kubeconfig), startReplica(t, bin, kubeconfig)
	replicas := []*replica{a, b}

	var leader *replica
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var lease coordinationv1.Lease
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "kfed-controller"}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		for _, r := range replicas {
			if r.leads() {
				leader = r
				return nil
			}
		}
		return fmt.Errorf("holder %q, but no replica logged that it leads", *lease.Spec.HolderIdentity)
	})
	standby := a
	if leader == a {
		standby = b
	}

	svc := fedtest.FederatedService("default", "one")
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), kfedv1alpha1.ConditionPublished, "True", "cluster-1, cluster-2")
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		body, err := fedtest.Get(ctx, "http://"+leader.metrics+"/metrics")
		if err != nil {
			return err
		}
		for _, want := range []string{
			`kfed_shard_operations_total{cluster="cluster-1",operation="create"} 1`,
			`kfed_member_clusters_ready 2`,
			`kfed_federated_services{condition="kfed.io/Published",status="True"} 1`,
			`controller_runtime_reconcile_total{controller="federated-service"`,
		} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("metrics lack %s", want)
			}
		}
		return nil
	})
	// Balancers, in a member and in the control plane, need no more than
	// deploy/ grants either.
	for _, cluster := range []string{"cluster-1", "federation"} {
		c := f.Client(cluster)
		fedtest.Create(t, c, fedtest.Deployment("default", "bal-a", "bal", "", 1), fedtest.Deployment("default", "bal-b", "bal", "", 1),
			fedtest.NewBalancer("default", "bal", "bal", 6, fedtest.PriorityPolicy("a", "b"),
				kfedv1alpha1.BalancerTarget{Name: "a", MaxReplicas: new(int32(2)), ScaleTargetRef: fedtest.BalancerTarget("", "bal-a").ScaleTargetRef},
				fedtest.BalancerTarget("b", "bal-b")))
		fedtest.WantReplicas(t, c, "default", []string{"bal-a", "bal-b"}, []int32{2, 4}, 30*time.Second)
		fedtest.WantClusterEvent(t, f, cluster, &kfedv1alpha1.Balancer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bal"}},
			corev1.EventTypeNormal, "ScaledTarget")
		fedtest.WantBalancerCondition(t, c, client.ObjectKey{Namespace: "default", Name: "bal"}, kfedv1alpha1.BalancerBalanced, "True",
			kfedv1alpha1.ReasonTargetsScaled, 10*time.Second)
	}
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		body, err := fedtest.Get(ctx, "http://"+leader.metrics+"/metrics")
		if err != nil {
			return err
		}
		for _, want := range []string{
			`kfed_balancer_scale_writes_total{cluster="cluster-1"} 2`,
			`kfed_balancer_scale_writes_total{cluster="federation"} 2`,
			`kfed_balancer_reconciles_total{cluster="cluster-1",result="TargetsScaled"}`,
		} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("metrics lack %s", want)
			}
		}
		return nil
	})

	if body, _ := fedtest.Get(ctx, "http://"+standby.metrics+"/metrics"); strings.Contains(body, "kfed_shard_operations_total{") {
		t.Errorf("the standby reconciled while the leader held the lease")
	}

	// The leader stops cleanly and releases the lease; the standby takes over.
	// The next Service is created once the leader has exited: a leader still
	// shutting down could otherwise publish it before its controllers stop.
	if err := leader.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leader.proc.Done():
	case <-time.After(30 * time.Second):
		leader.proc.Kill()
		t.Fatal("the leader did not exit within 30 s of SIGTERM")
	}
	two := fedtest.FederatedService("default", "two")
	if err := fed.Create(ctx, two); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(two), kfedv1alpha1.ConditionPublished, "True", "cluster-1, cluster-2")
	if !standby.leads() {
		t.Errorf("the standby published without logging that it took the lease:\n%s", standby.log.String())
	}
}

// leastPrivilegeKubeconfig applies deploy/'s RBAC and writes a kubeconfig
// whose "federation" context is the kfed-controller ServiceAccount and whose
// member contexts are each member's kfed-member ServiceAccount.
func leastPrivilegeKubeconfig(t *testing.T, f *framework.Federation) string {
	t.Helper()
	f.Apply("federation", []string{"deploy/controller/controller.yaml", "deploy/rbac/role.yaml"}, "Deployment")
	cfg, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos["federation"] = &clientcmdapi.AuthInfo{Token: f.Token("federation", "kfed-system", "kfed-controller")}
	for _, m := range f.Members {
		f.Apply(m.Name, []string{"deploy/member/rbac.yaml"})
		cfg.AuthInfos[m.Name] = &clientcmdapi.AuthInfo{Token: f.Token(m.Name, "kfed-system", "kfed-member")}
	}
	path := filepath.Join(t.TempDir(), "least-privilege.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestControllerWithAnOlderChartsRBACStillServesServices runs the controller
// with deploy/'s RBAC less what an older chart lacked (Ingresses, Gateway
// API): it leaves those kinds alone, saying why, and federates Services. An
// informer for a kind it may not watch would never sync and held up every
// controller (found upgrading the chart with the previous release's RBAC).
func TestControllerWithAnOlderChartsRBACStillServesServices(t *testing.T) {
	f := framework.Start(t, framework.Members(1), framework.LoadBalancer())
	kubeconfig := leastPrivilegeKubeconfig(t, f)
	fed := f.Client("federation")
	ctx := context.Background()
	var role rbacv1.ClusterRole
	if err := fed.Get(ctx, client.ObjectKey{Name: "kfed-controller"}, &role); err != nil {
		t.Fatal(err)
	}
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, "networking.k8s.io") || slices.Contains(r.APIGroups, "gateway.networking.k8s.io")
	})
	if err := fed.Update(ctx, &role); err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	m := f.Members[0]
	if _, err := clusters.Join(ctx, fed, clusters.JoinOptions{Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: raw}); err != nil {
		t.Fatal(err)
	}
	bin := framework.BuildCommand(t, "kfed-controller")
	r := startReplica(t, bin, kubeconfig)

	svc := fedtest.FederatedService("default", "one")
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), kfedv1alpha1.ConditionPublished, "True", "cluster-1")
	if log := r.log.String(); !strings.Contains(log, "not federating Ingresses") {
		t.Errorf("the controller did not say why it leaves Ingresses alone:\n%s", log)
	}
}
