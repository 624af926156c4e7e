// Package inventory tests kfed with the Cluster Inventory API against real
// API servers: members listed only as ClusterProfiles reached through an exec
// plugin, the ClusterProfiles kfed writes for joined clusters, and
// PlacementDecisions in and out.
package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/controllers/inventory"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

const (
	fleetNS   = "fleet"       // the inventory's ClusterProfiles
	tokensNS  = "fleet-creds" // the tokens the plugin hands out
	provider  = "secretreader"
	zone      = "example.com."
	demoName  = "demo.default.fed.svc.example.com."
	probeTick = 300 * time.Millisecond // framework.StartController's probe interval
)

// bed is a federation whose members are known only from ClusterProfiles.
type bed struct {
	f      *framework.Federation
	cp     client.Client
	dnsAdr string
}

// TestClusterProfilesAreMembers is one long test because its subtests share
// one federation of four API servers, a controller and a CoreDNS, each
// starting from what the one before left: starting them per subtest would
// cost minutes on CI's two cores.
func TestClusterProfilesAreMembers(t *testing.T) {
	f := framework.Start(t, framework.Members(4), framework.LoadBalancer())
	b := &bed{f: f, cp: f.Client("federation")}
	ctx := context.Background()
	for _, ns := range []string{fleetNS, tokensNS} {
		if err := b.cp.Create(ctx, framework.Namespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	acc := b.providerFile(t)
	for _, m := range f.Members[:3] {
		b.addProfile(t, m)
	}
	f.StartController(manager.Options{Inventory: manager.InventoryOptions{
		Inventory: kfedv1alpha1.InventoryClusterProfile, InventoryNamespace: fleetNS, Access: acc,
	}})
	b.dnsAdr = b.startCoreDNS(t)
	demo := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
			Selector: map[string]string{"app": "demo"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if err := b.cp.Create(ctx, demo); err != nil {
		t.Fatal(err)
	}

	t.Run("three profiles reached through the exec plugin get the demo Service's shards and DNS", func(t *testing.T) {
		b.wantShards(t, "demo", 60*time.Second, "cluster-1", "cluster-2", "cluster-3")
		b.wantAnswer(t, 30*time.Second, "cluster-1", "cluster-2", "cluster-3")
		var c kfedv1alpha1.Cluster
		if err := b.cp.Get(ctx, client.ObjectKey{Name: "cluster-3"}, &c); err != nil {
			t.Fatal(err)
		}
		if r := c.Spec.ClusterProfileRef; r == nil || c.Spec.KubeconfigSecretRef.Name != "" || c.Spec.Region != "europe-west1" {
			t.Errorf("cluster-3 spec %+v: want a profile reference, no Secret, and the profile's region", c.Spec)
		}
		var secrets corev1.SecretList
		if err := b.cp.List(ctx, &secrets, client.InNamespace(kfedv1alpha1.DefaultNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			t.Errorf("kfed made Secret %s/%s for an inventory member", s.Namespace, s.Name)
		}
	})

	t.Run("a fourth profile gets them without a restart", func(t *testing.T) {
		b.addProfile(t, f.Members[3])
		b.wantShards(t, "demo", 60*time.Second, "cluster-1", "cluster-2", "cluster-3", "cluster-4")
		b.wantAnswer(t, 30*time.Second, "cluster-1", "cluster-2", "cluster-3", "cluster-4")
	})

	t.Run("ControlPlaneHealthy=False leaves the answers sooner than an unreachable Cluster turns Offline", func(t *testing.T) {
		// An unreachable Cluster turns Offline after 3 failed probes and
		// keeps its records; the inventory's verdict counts at once and
		// withdraws them, within that bound plus the DNS path.
		start := time.Now()
		b.setHealthy(t, "cluster-2", metav1.ConditionFalse)
		b.wantAnswer(t, 3*probeTick+5*time.Second, "cluster-1", "cluster-3", "cluster-4")
		t.Logf("left the answer %v after the condition turned False", time.Since(start).Round(time.Millisecond))
		b.wantCondition(t, "cluster-2", kfedv1alpha1.ReasonControlPlaneUnhealthy)
		b.setHealthy(t, "cluster-2", metav1.ConditionTrue)
		b.wantAnswer(t, 30*time.Second, "cluster-1", "cluster-2", "cluster-3", "cluster-4")
	})

	t.Run("a deleted profile is unjoined: shard removed from the member, endpoints out, profile released", func(t *testing.T) {
		p := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: "cluster-4"}}
		if err := b.cp.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		b.wantAnswer(t, 30*time.Second, "cluster-1", "cluster-2", "cluster-3")
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			var s corev1.Service
			if err := f.Client("cluster-4").Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, &s); !apierrors.IsNotFound(err) {
				return fmt.Errorf("shard in cluster-4 still there (%v)", err)
			}
			for _, o := range []client.Object{p, &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster-4"}}} {
				if err := b.cp.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s still there (%v)", o, o.GetName(), err)
				}
			}
			return nil
		})
	})

	t.Run("kfed join writes a ClusterProfile the inventory's schema accepts; a profile of a taken name waits", func(t *testing.T) {
		raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		m := f.Members[3]
		if _, err := clusters.Join(ctx, b.cp, clusters.JoinOptions{Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: raw}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			var p inventoryv1alpha1.ClusterProfile
			if err := b.cp.Get(ctx, client.ObjectKey{Namespace: kfedv1alpha1.DefaultNamespace, Name: m.Name}, &p); err != nil {
				return err
			}
			got := []string{p.Spec.ClusterManager.Name, p.Labels[inventoryv1alpha1.LabelClusterManager],
				string(condStatus(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)),
				string(condStatus(p.Status.Conditions, inventoryv1alpha1.ConditionJoined)),
				p.Property(inventory.PropertyRegion), p.Property(inventory.PropertyZone)}
			want := []string{"kfed", "kfed", "True", "True", m.Region, strings.Join(m.Zones, ",")}
			if !slices.Equal(got, want) {
				return fmt.Errorf("profile manager, label, healthy, joined, region, zone = %q, want %q", got, want)
			}
			if len(p.Status.AccessProviders) != 1 || p.Status.AccessProviders[0].Cluster.Server != m.URL ||
				len(p.Status.AccessProviders[0].Cluster.CertificateAuthorityData) == 0 {
				return fmt.Errorf("access providers %+v: want one with server %s and its CA", p.Status.AccessProviders, m.URL)
			}
			return nil
		})
		// The same name as a profile of the inventory: the joined cluster
		// keeps it, the profile waits and says why.
		b.addProfile(t, m)
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			return b.wantEvent(ctx, "cluster-4", "NameTaken")
		})
		var c kfedv1alpha1.Cluster
		if err := b.cp.Get(ctx, client.ObjectKey{Name: m.Name}, &c); err != nil || c.Spec.ClusterProfileRef != nil {
			t.Errorf("cluster-4 after the profile appeared: %+v, %v; want the joined one", c.Spec, err)
		}
	})

	t.Run("a federated Deployment's PlacementDecision lists its clusters and follows the selector", func(t *testing.T) {
		d := deployment("web", "kfed.io/region=us-east1")
		if err := b.cp.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		b.wantDecision(t, inventory.DecisionName("deployment", "web"), "fleet/cluster-1", "fleet/cluster-2", "kfed-system/cluster-4")
		patch := client.MergeFrom(d.DeepCopy())
		d.Annotations[kfedv1alpha1.AnnotationClusterSelector] = "kfed.io/region=europe-west1"
		if err := b.cp.Patch(ctx, d, patch); err != nil {
			t.Fatal(err)
		}
		b.wantDecision(t, inventory.DecisionName("deployment", "web"), "fleet/cluster-3")
		b.wantDecision(t, inventory.DecisionName("service", "demo"), "fleet/cluster-1", "fleet/cluster-2", "fleet/cluster-3", "kfed-system/cluster-4")
	})

	t.Run("a Service placed by a PlacementDecision follows it", func(t *testing.T) {
		pd := &inventoryv1alpha1.PlacementDecision{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fleet-pick"},
			Decisions:  decisions("cluster-1", "cluster-3"), SchedulerName: "test-fleet",
		}
		if err := b.cp.Create(ctx, pd); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "picked", Namespace: "default",
				Annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "fleet-pick"}},
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
				Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		if err := b.cp.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		b.wantShards(t, "picked", 30*time.Second, "cluster-1", "cluster-3")
		pd.Decisions = decisions("cluster-2")
		if err := b.cp.Update(ctx, pd); err != nil {
			t.Fatal(err)
		}
		b.wantShards(t, "picked", 30*time.Second, "cluster-2")
		b.wantDecision(t, inventory.DecisionName("service", "picked"), "fleet/cluster-2")
	})

	t.Run("an Ingress placed by a PlacementDecision follows it", func(t *testing.T) {
		pd := &inventoryv1alpha1.PlacementDecision{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fleet-pick-site"},
			Decisions:  decisions("cluster-1"), SchedulerName: "test-fleet",
		}
		if err := b.cp.Create(ctx, pd); err != nil {
			t.Fatal(err)
		}
		class := loopbackgw.IngressClassName
		ing := &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "site", Annotations: map[string]string{
				kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationPlacementDecision: "fleet-pick-site"}},
			Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: "www.example.com"}}},
		}
		if err := b.cp.Create(ctx, ing); err != nil {
			t.Fatal(err)
		}
		b.wantIngressCopies(t, "site", 30*time.Second, "cluster-1")
		pd.Decisions = decisions("cluster-3")
		if err := b.cp.Update(ctx, pd); err != nil {
			t.Fatal(err)
		}
		b.wantIngressCopies(t, "site", 30*time.Second, "cluster-3")
		b.wantDecision(t, inventory.DecisionName("ingress", "site"), "fleet/cluster-3")
	})
}

// providerFile writes the access provider file: the secretreader plugin of
// the test bed, reading tokens from fleet-creds in the control plane.
func (b *bed) providerFile(t *testing.T) *access.Config {
	t.Helper()
	dir, err := framework.Build(t, "./test/secretreader")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "secretreader")
	file, err := json.Marshal(map[string]any{"providers": []any{map[string]any{
		"name": provider,
		"execConfig": map[string]any{
			"apiVersion": "client.authentication.k8s.io/v1", "command": bin, "provideClusterInfo": true,
			"env": []any{map[string]string{"name": "KUBECONFIG", "value": b.f.Kubeconfig},
				map[string]string{"name": "KFED_TOKEN_NAMESPACE", "value": tokensNS}},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := access.Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	return acc
}

// addProfile lists member m in the inventory: a ServiceAccount in m with its
// token in fleet-creds, and a ClusterProfile whose access provider names the
// plugin and the cluster, with m's place as properties.
func (b *bed) addProfile(t *testing.T, m *devenv.Cluster) {
	t.Helper()
	ctx := context.Background()
	mc := b.f.Client(m.Name)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fleet"}}
	if err := mc.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: "fleet"}},
	}
	if err := mc.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tok := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tokensNS, Name: m.Name},
		Data: map[string][]byte{"token": []byte(b.f.Token(m.Name, "default", "fleet"))}}
	if err := b.cp.Create(ctx, tok); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	p := &inventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: m.Name,
			Labels: map[string]string{inventoryv1alpha1.LabelClusterManager: "test-fleet"}},
		Spec: inventoryv1alpha1.ClusterProfileSpec{ClusterManager: inventoryv1alpha1.ClusterManager{Name: "test-fleet"}},
	}
	if err := b.cp.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	status := inventoryv1alpha1.ClusterProfileStatus{
		Conditions: []metav1.Condition{{Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: metav1.ConditionTrue,
			Reason: "Healthy", LastTransitionTime: metav1.Now()}},
		Properties: []inventoryv1alpha1.Property{
			{Name: inventory.PropertyRegion, Value: m.Region},
			{Name: inventory.PropertyZone, Value: strings.Join(m.Zones, ",")},
		},
		AccessProviders: []inventoryv1alpha1.AccessProvider{{Name: provider, Cluster: clientcmdv1.Cluster{
			Server: m.URL, CertificateAuthorityData: m.Config.CAData,
			Extensions: []clientcmdv1.NamedExtension{{Name: inventoryv1alpha1.ExecExtension,
				Extension: runtime.RawExtension{Raw: []byte(`{"clusterName":"` + m.Name + `"}`)}}},
		}}},
	}
	// kfed's finalizer may land between the create and this write.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := b.cp.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status = status
		return b.cp.Status().Update(ctx, p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (b *bed) setHealthy(t *testing.T, name string, status metav1.ConditionStatus) {
	t.Helper()
	var p inventoryv1alpha1.ClusterProfile
	if err := b.cp.Get(context.Background(), client.ObjectKey{Namespace: fleetNS, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := b.cp.Get(context.Background(), client.ObjectKeyFromObject(&p), &p); err != nil {
			return err
		}
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: inventoryv1alpha1.ConditionControlPlaneHealthy,
			Status: status, Reason: "Test", Message: "set by the test"})
		return b.cp.Status().Update(context.Background(), &p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (b *bed) wantCondition(t *testing.T, cluster, reason string) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var c kfedv1alpha1.Cluster
		if err := b.cp.Get(ctx, client.ObjectKey{Name: cluster}, &c); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(c.Status.Conditions, kfedv1alpha1.ClusterReady); r == nil || r.Reason != reason {
			return fmt.Errorf("Ready %+v, want reason %s", r, reason)
		}
		return nil
	})
}

// wantShards waits until exactly the members named hold the shard of
// default/name.
func (b *bed) wantShards(t *testing.T, name string, within time.Duration, want ...string) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		var got []string
		for _, m := range b.f.Members {
			var s corev1.Service
			err := b.f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &s)
			if err == nil {
				got = append(got, m.Name)
			} else if !apierrors.IsNotFound(err) {
				return err
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("shards of %s in %v, want %v", name, got, want)
		}
		return nil
	})
}

// wantIngressCopies waits until the Ingress default/name has copies in
// exactly the members named.
func (b *bed) wantIngressCopies(t *testing.T, name string, within time.Duration, want ...string) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		var got []string
		for _, m := range b.f.Members {
			var ing networkingv1.Ingress
			err := b.f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &ing)
			if err == nil {
				got = append(got, m.Name)
			} else if !apierrors.IsNotFound(err) {
				return err
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("copies of Ingress %s in %v, want %v", name, got, want)
		}
		return nil
	})
}

// wantAnswer waits until the demo Service's global name answers with
// exactly the load-balancer addresses of the members named.
func (b *bed) wantAnswer(t *testing.T, within time.Duration, want ...string) {
	t.Helper()
	framework.Eventually(t, within, func(context.Context) error {
		c := &dns.Client{Timeout: 2 * time.Second}
		q := new(dns.Msg)
		q.SetQuestion(demoName, dns.TypeA)
		r, _, err := c.Exchange(q, b.dnsAdr)
		if err != nil {
			return err
		}
		var got []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				got = append(got, b.owner(a.A.String()))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s answered %v (%s), want the addresses of %v; %s", demoName, got, dns.RcodeToString[r.Rcode], want, b.state())
		}
		return nil
	})
}

// state says what the control plane holds for the demo Service, for a
// failure's message: each Cluster's Ready condition and the DNSEndpoint's
// global targets.
func (b *bed) state() string {
	ctx := context.Background()
	var out []string
	var cl kfedv1alpha1.ClusterList
	if err := b.cp.List(ctx, &cl); err == nil {
		for _, c := range cl.Items {
			if r := meta.FindStatusCondition(c.Status.Conditions, kfedv1alpha1.ClusterReady); r != nil {
				out = append(out, c.Name+" Ready="+string(r.Status)+"/"+r.Reason)
			}
		}
	}
	var ep extdnsv1alpha1.DNSEndpoint
	if err := b.cp.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, &ep); err == nil {
		for _, e := range ep.Spec.Endpoints {
			if e.DNSName == strings.TrimSuffix(demoName, ".") && e.RecordType == "A" {
				out = append(out, "DNSEndpoint "+strings.Join(e.Targets, ","))
			}
		}
	}
	return strings.Join(out, "; ")
}

// owner names the member whose load-balancer block holds addr.
func (b *bed) owner(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	for i, m := range b.f.Members {
		if loopbacklb.Block(b.f.LBBase, i).Contains(a) {
			return m.Name
		}
	}
	return addr
}

func (b *bed) wantDecision(t *testing.T, name string, want ...string) {
	t.Helper()
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var pd inventoryv1alpha1.PlacementDecision
		if err := b.cp.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &pd); err != nil {
			return err
		}
		var got []string
		for _, d := range pd.Decisions {
			got = append(got, d.ClusterProfileRef.Namespace+"/"+d.ClusterProfileRef.Name)
		}
		if !slices.Equal(got, want) || pd.SchedulerName != inventory.SchedulerName {
			return fmt.Errorf("PlacementDecision %s lists %v (scheduler %q), want %v", name, got, pd.SchedulerName, want)
		}
		return nil
	})
}

func (b *bed) wantEvent(ctx context.Context, profile, reason string) error {
	var evs corev1.EventList
	if err := b.cp.List(ctx, &evs, client.InNamespace(fleetNS)); err != nil {
		return err
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == profile && e.Reason == reason {
			return nil
		}
	}
	return errors.New("no " + reason + " Event on ClusterProfile " + profile)
}

func (b *bed) startCoreDNS(t *testing.T) string {
	t.Helper()
	bin := framework.BuildCommand(t, "coredns")
	srv, err := b.f.StartCoreDNS(context.Background(), devenv.CoreDNSOptions{
		Binary: bin, Name: "coredns-edge", Zone: zone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: zone, Federation: "fed", Kubeconfig: b.f.Kubeconfig, Context: "federation"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv.Addr
}

func deployment(name, selector string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{
			"kfed.io/federated": "true", kfedv1alpha1.AnnotationClusterSelector: selector,
		}},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.test/web"}}},
			},
		},
	}
}

func decisions(names ...string) []inventoryv1alpha1.ClusterDecision {
	var out []inventoryv1alpha1.ClusterDecision
	for _, n := range names {
		out = append(out, inventoryv1alpha1.ClusterDecision{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Namespace: fleetNS, Name: n}})
	}
	return out
}

func condStatus(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Status
	}
	return ""
}
