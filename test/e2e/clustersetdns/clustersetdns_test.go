// Package clustersetdns tests kfed's CoreDNS answering a member's
// clusterset.local (the clusterset plugin) against a real kube-apiserver: it
// writes ServiceImports and MCS EndpointSlices by hand, as an MCS controller
// would, and asks a real CoreDNS over UDP and TCP.
package clustersetdns

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/framework"
)

const (
	zone  = "clusterset.local."
	web   = "web.shop.svc.clusterset.local."
	db    = "db.shop.svc.clusterset.local."
	db0   = "db-0.cluster-1.db.shop.svc.clusterset.local."
	dbPod = "10-2-0-20.cluster-2.db.shop.svc.clusterset.local."
)

func TestCoreDNSAnswersClustersetLocalFromTheMembersImports(t *testing.T) {
	f := framework.Start(t, framework.Members(1))
	ctx := context.Background()
	member := f.Cluster("cluster-1")
	if err := f.InstallCRDs(ctx, member, fstest.MapFS{
		"serviceimports.yaml": {Data: mcscrd.ServiceImportCRD},
	}); err != nil {
		t.Fatal(err)
	}
	c := memberClient(t, f)
	for _, ns := range []string{"shop", "kfed-system"} {
		if err := c.Create(ctx, framework.Namespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kfed-clusterset-dns"}}); err != nil {
		t.Fatal(err)
	}
	f.Apply("cluster-1", []string{"deploy/coredns/clusterset-rbac.yaml"})

	srv, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: framework.BuildCommand(t, "coredns"), Name: "coredns-clusterset", Cluster: "cluster-1", Zone: zone,
		Corefile: devenv.ClustersetCorefile(devenv.ClustersetZone{Kubeconfig: serviceAccountKubeconfig(t, f), Context: "cluster-1"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)

	webImport := &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.42.0.7"},
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	dbImport := &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless,
			Ports: []mcsv1beta1.ServicePort{{Name: "sql", Protocol: corev1.ProtocolTCP, Port: 5432}}},
	}
	slice1 := mcsSlice("db-cluster-1", "cluster-1",
		discoveryv1.Endpoint{Addresses: []string{"10.1.0.10"}, Hostname: ptr.To("db-0")},
		discoveryv1.Endpoint{Addresses: []string{"10.1.0.11"}, Hostname: ptr.To("db-1"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}})
	slice2 := mcsSlice("db-cluster-2", "cluster-2", discoveryv1.Endpoint{Addresses: []string{"10.2.0.20"}})
	created := time.Now()
	for _, o := range []client.Object{webImport, dbImport, slice1, slice2} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, 5*time.Second, func(context.Context) error {
		return want(srv.Addr, "udp", dbPod, dns.TypeA, "NOERROR", "A 10.2.0.20")
	})
	t.Logf("served %v after the creates", time.Since(created).Round(time.Millisecond))

	tests := []struct {
		name  string
		qname string
		qtype uint16
		want  []string // rcode, then the answer's records (sorted)
	}{
		{"ClusterSetIP import answers its clusterset IP", web, dns.TypeA, []string{"NOERROR", "A 10.42.0.7"}},
		{"no IPv6 clusterset IP: NODATA", web, dns.TypeAAAA, []string{"NOERROR"}},
		{"SRV per named port targets the service name", "_http._tcp." + web, dns.TypeSRV,
			[]string{"NOERROR", "SRV 0 1 80 " + web}},
		{"headless import answers the ready endpoints of every cluster", db, dns.TypeA,
			[]string{"NOERROR", "A 10.1.0.10", "A 10.2.0.20"}},
		{"a headless endpoint's hostname name", db0, dns.TypeA, []string{"NOERROR", "A 10.1.0.10"}},
		{"an endpoint that is not ready has no name", "db-1.cluster-1." + db, dns.TypeA, []string{"NXDOMAIN"}},
		{"headless SRV targets each endpoint's name", "_sql._tcp." + db, dns.TypeSRV,
			[]string{"NOERROR", "SRV 0 1 5432 " + dbPod, "SRV 0 1 5432 " + db0}},
		{"dns-version", "dns-version." + zone, dns.TypeTXT, []string{"NOERROR", `TXT "1.0.0"`}},
		{"a Service that is not exported is NXDOMAIN", "cart.shop.svc." + zone, dns.TypeA, []string{"NXDOMAIN"}},
		{"the namespace is an empty non-terminal", "shop.svc." + zone, dns.TypeA, []string{"NOERROR"}},
	}
	for _, proto := range []string{"udp", "tcp"} {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				if err := want(srv.Addr, proto, tt.qname, tt.qtype, tt.want...); err != nil {
					t.Error(err)
				}
			})
		}
	}

	t.Run("deleted imports and endpoints go NXDOMAIN", func(t *testing.T) {
		deleted := time.Now()
		for _, o := range []client.Object{webImport, slice1, slice2} {
			if err := c.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			for _, name := range []string{web, "_http._tcp." + web, db, db0} {
				if err := want(srv.Addr, "udp", name, dns.TypeA, "NXDOMAIN"); err != nil {
					return err
				}
			}
			return nil
		})
		t.Logf("NXDOMAIN %v after the deletes", time.Since(deleted).Round(time.Millisecond))
	})
}

// A member without the MCS CRDs exports nothing: the plugin syncs, answers
// NXDOMAIN, and serves the imports once the CRD is installed.
func TestClustersetDNSWaitsForTheMCSCRDs(t *testing.T) {
	f := framework.Start(t, framework.Members(1))
	ctx := context.Background()
	srv, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: framework.BuildCommand(t, "coredns"), Name: "coredns-clusterset", Cluster: "cluster-1", Zone: zone,
		Corefile: devenv.ClustersetCorefile(devenv.ClustersetZone{Kubeconfig: f.Kubeconfig, Context: "cluster-1"}),
	})
	if err != nil {
		t.Fatalf("CoreDNS did not start without the ServiceImport CRD: %v", err)
	}
	t.Cleanup(srv.Stop)
	if err := want(srv.Addr, "udp", web, dns.TypeA, "NXDOMAIN"); err != nil {
		t.Fatal(err)
	}
	if err := f.InstallCRDs(ctx, f.Cluster("cluster-1"), fstest.MapFS{
		"serviceimports.yaml": {Data: mcscrd.ServiceImportCRD},
	}); err != nil {
		t.Fatal(err)
	}
	c := memberClient(t, f)
	if err := c.Create(ctx, framework.Namespace("shop")); err != nil {
		t.Fatal(err)
	}
	installed := time.Now()
	if err := c.Create(ctx, &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.42.0.7"},
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}); err != nil {
		t.Fatal(err)
	}
	// The informer lists again with its backoff (up to 30 s) after the
	// failed watches.
	framework.Eventually(t, 45*time.Second, func(context.Context) error {
		return want(srv.Addr, "udp", web, dns.TypeA, "NOERROR", "A 10.42.0.7")
	})
	t.Logf("served %v after the CRD", time.Since(installed).Round(time.Millisecond))
}

// mcsSlice is an EndpointSlice of shop/db from cluster, labelled as an MCS
// controller labels the slices it imports.
func mcsSlice(name, cluster string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{
			mcsv1beta1.LabelServiceName:   "db",
			mcsv1beta1.LabelSourceCluster: cluster,
			discoveryv1.LabelManagedBy:    "test.kfed.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("sql"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](5432)}},
	}
}

// want asks server over proto for name and checks the reply's rcode and
// answer, as "RCODE" then "TYPE rdata" strings in any order.
func want(server, proto, name string, qtype uint16, want ...string) error {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Net: proto, Timeout: 2 * time.Second}).Exchange(m, server)
	if err != nil {
		return fmt.Errorf("%s %s over %s: %w", dns.TypeToString[qtype], name, proto, err)
	}
	if !r.Authoritative {
		return fmt.Errorf("%s %s over %s: not authoritative", dns.TypeToString[qtype], name, proto)
	}
	got := []string{dns.RcodeToString[r.Rcode]}
	for _, rr := range r.Answer {
		got = append(got, dns.TypeToString[rr.Header().Rrtype]+" "+strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	slices.Sort(got[1:])
	want = slices.Clone(want)
	slices.Sort(want[1:])
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s %s over %s: got %q, want %q", dns.TypeToString[qtype], name, proto, got, want)
	}
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
		if len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
			return fmt.Errorf("%s %s over %s: a denial without the zone's SOA: %v", dns.TypeToString[qtype], name, proto, r.Ns)
		}
	}
	return nil
}

// memberClient is a client of cluster-1 that knows the MCS types.
func memberClient(t *testing.T, f *framework.Federation) client.Client {
	t.Helper()
	scheme := framework.NewScheme(t)
	if err := mcsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(f.Cluster("cluster-1").Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serviceAccountKubeconfig writes a kubeconfig (context "cluster-1") whose
// only identity is kfed-system/kfed-clusterset-dns of cluster-1, bound by
// deploy/coredns/clusterset-rbac.yaml: the plugin runs with the permissions
// the manifest gives and no more.
func serviceAccountKubeconfig(t *testing.T, f *framework.Federation) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster-1"] = admin.Clusters["cluster-1"]
	cfg.AuthInfos["kfed-clusterset-dns"] = &clientcmdapi.AuthInfo{Token: f.Token("cluster-1", "kfed-system", "kfed-clusterset-dns")}
	cfg.Contexts["cluster-1"] = &clientcmdapi.Context{Cluster: "cluster-1", AuthInfo: "kfed-clusterset-dns"}
	path := filepath.Join(t.TempDir(), "kfed-clusterset-dns.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
