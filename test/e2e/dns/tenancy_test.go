package dns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/policy/tenancy/report"
	"github.com/kfed-io/kfed/test/framework"
)

// tenantCannotPublishAnotherNamespacesNames
// (TestTenantCannotPublishAnotherNamespacesNames) is the hijack of issue 22 on
// real API servers, a real CoreDNS in each member and a real BIND: a tenant
// whose ServiceAccount may write only DNSEndpoints and Services in its own
// namespace copies kfed's labels onto a DNSEndpoint naming default/demo's
// global name and a name of the zone's apex. Neither reaches any member's
// CoreDNS or BIND; demo keeps exactly its own addresses; the tenant's own
// name is served; the object carries a condition and Warning Events. The
// same object in the trusted
// namespace publishes the apex name, and still not demo's.
func tenantCannotPublishAnotherNamespacesNames(t *testing.T, f *framework.Federation) {
	const zone = "kfed.test"
	srv := startControllerWithBIND(t, f, zone)
	ctx := context.Background()
	fed := f.Client("federation")

	binary := fedtest.BuildCoreDNS(t)
	var dnsAddrs []string
	for _, m := range f.Members {
		kubeconfig := fedtest.CoreDNSKubeconfig(t, f, m.Name)
		cd, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
			Binary: binary, Name: "coredns-" + m.Name, Cluster: m.Name, Zone: fedtest.DNSZone,
			Corefile: devenv.KfedCorefile(devenv.KfedZone{
				Zone: fedtest.DNSZone, Federation: "fed", Cluster: m.Name, Kubeconfig: kubeconfig, Context: "federation",
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cd.Stop)
		dnsAddrs = append(dnsAddrs, cd.Addr)
	}

	demo := fedtest.FederatedService("default", "demo")
	// The tenant's Service and DNSEndpoints go first (cleanups run last
	// first), then demo.
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(demo))
	if err := fed.Create(ctx, demo); err != nil {
		t.Fatal(err)
	}
	demoName := dnsendpoint.NewNames("fed", zone, "default", "demo")
	global := demoName.Global()
	// demo's own addresses: each shard's load balancer (BIND and clients
	// of other clusters) and cluster IP (a member's own CoreDNS).
	var own []string
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKeyFromObject(demo), &ep); err != nil {
			return err
		}
		table, err := dnsendpoint.ReadClusters(&ep)
		if err != nil {
			return err
		}
		own = nil
		for _, c := range table {
			for _, a := range append(c.Addresses, c.ClusterIPs...) {
				own = append(own, a.String())
			}
			if len(c.Addresses) == 0 {
				return fmt.Errorf("cluster %s has no address yet", c.Name)
			}
		}
		if len(table) != 2 {
			return fmt.Errorf("demo has %d clusters, want 2", len(table))
		}
		return nil
	})
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if got := srv.Answers(t, global, dns.TypeA); len(got) != 2 {
			return fmt.Errorf("BIND answers %v for %s, want 2 addresses", got, global)
		}
		return nil
	})

	// The tenant: a namespace, and a ServiceAccount that may write
	// DNSEndpoints and Services there and nothing else.
	tenant := tenantClient(t, f, "intruder")
	trusted := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "hand-written", Labels: dnsendpoint.Selector("fed")}}
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKey{Namespace: "intruder", Name: "demo"})
	intruder := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "intruder", Name: "x", Labels: dnsendpoint.Selector("fed")},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: global, RecordType: "A", Targets: []string{"198.51.100.66"}, RecordTTL: 30},
			{DNSName: "www." + zone, RecordType: "A", Targets: []string{"198.51.100.67"}, RecordTTL: 30},
			{DNSName: "x.intruder.fed.svc." + zone, RecordType: "A", Targets: []string{"198.51.100.68"}, RecordTTL: 30},
		}},
	}
	t.Run("RBAC keeps the tenant in its namespace", func(t *testing.T) {
		other := intruder.DeepCopy()
		other.Namespace = "default"
		if err := tenant.Create(ctx, other); !apierrors.IsForbidden(err) {
			t.Fatalf("creating a DNSEndpoint in default as the tenant: %v, want forbidden", err)
		}
	})
	fedtest.DeleteAtEnd(t, fed, intruder.DeepCopy(), trusted.DeepCopy())
	if err := tenant.Create(ctx, intruder); err != nil {
		t.Fatal(err)
	}
	// A federated Service of the tenant's own, named as the victim's.
	if err := tenant.Create(ctx, fedtest.FederatedService("intruder", "demo")); err != nil {
		t.Fatal(err)
	}

	ownName := "x.intruder.fed.svc." + zone
	t.Run("the tenant's own name is served and published", func(t *testing.T) {
		framework.Eventually(t, 20*time.Second, func(context.Context) error {
			var errs []error
			for _, addr := range dnsAddrs {
				errs = append(errs, fedtest.WantAddresses(addr, "udp", dns.Fqdn(ownName), dns.TypeA, "198.51.100.68"))
			}
			if got := srv.Answers(t, ownName, dns.TypeA); !slices.Equal(got, []string{"198.51.100.68"}) {
				errs = append(errs, fmt.Errorf("BIND answers %v for %s", got, ownName))
			}
			return errors.Join(errs...)
		})
	})
	waitPublished(t, fed, client.ObjectKeyFromObject(intruder))

	t.Run("no member's CoreDNS nor BIND answers the intruder's addresses", func(t *testing.T) {
		for _, addr := range dnsAddrs {
			for range 20 {
				r, err := fedtest.Query(addr, "udp", dns.Fqdn(global), dns.TypeA)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range fedtest.AnswerStrings(r) {
					if !slices.Contains(own, a) {
						t.Fatalf("%s answers %s for %s, not one of demo's own addresses %v", addr, a, global, own)
					}
				}
				if len(r.Answer) != 2 {
					t.Fatalf("%s answers %v for %s, want demo's two clusters", addr, fedtest.AnswerStrings(r), global)
				}
			}
			if err := fedtest.WantRcode(addr, "www."+fedtest.DNSZone, dns.RcodeNameError); err != nil {
				t.Error(err)
			}
		}
		for _, a := range srv.Answers(t, global, dns.TypeA) {
			if !slices.Contains(own, a) {
				t.Errorf("BIND answers %s for %s, not one of demo's own addresses %v", a, global, own)
			}
		}
		if got := srv.Answers(t, "www."+zone, dns.TypeA); len(got) != 0 {
			t.Errorf("BIND answers %v for www.%s", got, zone)
		}
		if got := srv.Answers(t, demoName.Global(), dns.TypeA); len(got) != 2 {
			t.Errorf("BIND answers %v for demo, want its two addresses", got)
		}
	})

	// The metric, kfed_dnsendpoint_refused_endpoints, is checked against the
	// controller binary by test/monitoring: the registry of this process is
	// shared with the other tests' managers.
	t.Run("the refused object says so: condition and Warning Events", func(t *testing.T) {
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			var ep extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, client.ObjectKeyFromObject(intruder), &ep); err != nil {
				return err
			}
			c := meta.FindStatusCondition(ep.Status.Conditions, kfedv1alpha1.ConditionNamesAdmitted)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != report.ReasonNameNotOwned ||
				!strings.Contains(c.Message, global) || !strings.Contains(c.Message, "www."+zone) {
				return fmt.Errorf("condition %+v, want False/%s naming both names", c, report.ReasonNameNotOwned)
			}
			var events eventsv1.EventList
			if err := fed.List(ctx, &events, client.InNamespace("intruder")); err != nil {
				return err
			}
			var notes []string
			for _, e := range events.Items {
				if e.Regarding.Name == "x" && e.Type == corev1.EventTypeWarning && e.Reason == report.ReasonNameNotOwned {
					notes = append(notes, e.Note)
				}
			}
			for _, name := range []string{global, "www." + zone} {
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, name) && strings.Contains(n, "namespace") }) {
					return fmt.Errorf("no Warning Event names %s and the rule: %v", name, notes)
				}
			}
			return nil
		})
		// ExternalDNS marks a generation observed by updating the whole
		// status from its own type, without kfed's conditions.
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(context.Background(), client.ObjectKeyFromObject(intruder), &ep); err != nil {
			t.Fatal(err)
		}
		ep.Status = extdnsv1alpha1.DNSEndpointStatus{ObservedGeneration: ep.Generation}
		if err := fed.Status().Update(context.Background(), &ep); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			if err := fed.Get(ctx, client.ObjectKeyFromObject(intruder), &ep); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(ep.Status.Conditions, kfedv1alpha1.ConditionNamesAdmitted); c == nil || c.Status != metav1.ConditionFalse {
				return fmt.Errorf("after a status update without it, the condition is %+v, want False again", c)
			}
			return nil
		})
	})

	t.Run("the tenant's Service gets its own names, not demo's", func(t *testing.T) {
		theirs := dnsendpoint.NewNames("fed", zone, "intruder", "demo").Global()
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			if got := srv.Answers(t, theirs, dns.TypeA); len(got) != 2 {
				return fmt.Errorf("BIND answers %v for %s", got, theirs)
			}
			return nil
		})
		for _, a := range srv.Answers(t, global, dns.TypeA) {
			if !slices.Contains(own, a) {
				t.Errorf("BIND answers %s for %s after the tenant's Service", a, global)
			}
		}
	})

	t.Run("the same object in the trusted namespace publishes other names, not a tenant's", func(t *testing.T) {
		trusted.Spec.Endpoints = intruder.Spec.Endpoints[:2]
		if err := fed.Create(ctx, trusted); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 20*time.Second, func(context.Context) error {
			var errs []error
			for _, addr := range dnsAddrs {
				errs = append(errs, fedtest.WantAddresses(addr, "tcp", "www."+fedtest.DNSZone, dns.TypeA, "198.51.100.67"))
			}
			if got := srv.Answers(t, "www."+zone, dns.TypeA); !slices.Equal(got, []string{"198.51.100.67"}) {
				errs = append(errs, fmt.Errorf("BIND answers %v for www.%s", got, zone))
			}
			return errors.Join(errs...)
		})
		waitPublished(t, fed, client.ObjectKeyFromObject(trusted))
		for _, addr := range dnsAddrs {
			r, err := fedtest.Query(addr, "tcp", dns.Fqdn(global), dns.TypeA)
			if err != nil {
				t.Fatal(err)
			}
			if got := fedtest.AnswerStrings(r); slices.Contains(got, "198.51.100.66") {
				t.Errorf("%s answers the trusted namespace's address for a tenant's name: %v", addr, got)
			}
		}
		if got := srv.Answers(t, global, dns.TypeA); slices.Contains(got, "198.51.100.66") {
			t.Errorf("BIND answers the trusted namespace's address for a tenant's name: %v", got)
		}
	})
}

// tenantClient makes namespace ns with a ServiceAccount "tenant" that may
// do anything with DNSEndpoints and Services in ns and nothing else, and
// returns a client of the control plane with its token alone.
func tenantClient(t *testing.T, f *framework.Federation, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	fed := f.Client("federation")
	objs := []client.Object{
		framework.Namespace(ns),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"externaldns.k8s.io"}, Resources: []string{"dnsendpoints"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"*"}},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}},
		},
	}
	for _, o := range objs {
		if err := fed.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.AnonymousClientConfig(f.ControlPlane.Config)
	cfg.BearerToken = f.Token("federation", ns, "tenant")
	c, err := client.New(cfg, client.Options{Scheme: fed.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitPublished waits until the DNS sync has published the DNSEndpoint at
// key's current generation, so that what BIND holds is after a sync.
func waitPublished(t *testing.T, fed client.Client, key client.ObjectKey) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, key, &ep); err != nil {
			return err
		}
		for _, p := range ep.Status.Publishers {
			if p.Provider == "rfc2136" && p.ObservedGeneration == ep.Generation {
				return nil
			}
		}
		return fmt.Errorf("%s not yet published at generation %d: %+v", key, ep.Generation, ep.Status.Publishers)
	})
}
