package dns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/test/framework"
)

// webShard is one member's endpoint of a Service web.
type webShard struct {
	cluster, zone, lb, clusterIP string
}

var (
	shard1 = webShard{"cluster-1", "us-east1-b", "127.61.0.1", "10.96.0.11"}
	shard2 = webShard{"cluster-2", "us-east1-c", "127.62.0.1", "10.96.0.12"}
)

// webNames are the names, fully qualified, of Service web of a namespace in
// federation e2e under fedtest.DNSZone, with shards in cluster-1
// (us-east1-b) and cluster-2 (us-east1-c). Each test on a bed has a
// namespace of its own.
type webNames struct {
	global, region, zoneB, zoneC, europe, europeB, srv string
}

func namesOfWeb(namespace string) webNames {
	n := dnsendpoint.NewNames("e2e", strings.TrimSuffix(fedtest.DNSZone, "."), namespace, "web")
	return webNames{
		global: n.Global() + ".", region: n.Region("us-east1") + ".",
		zoneB: n.Zone("us-east1-b", "us-east1") + ".", zoneC: n.Zone("us-east1-c", "us-east1") + ".",
		europe: n.Region("europe-west1") + ".", europeB: n.Zone("europe-west1-b", "europe-west1") + ".",
		srv: n.SRV("http", "TCP") + ".",
	}
}

// webDNSEndpoint is the DNSEndpoint the services controller writes for
// namespace/web with shards (docs/design.md, "Desired DNS state"), made by
// the controller's own record model.
func webDNSEndpoint(namespace, federation string, shards ...webShard) *extdnsv1alpha1.DNSEndpoint {
	in := publish.Input{
		Names: publish.NewNames("e2e", "kfed.test", namespace, "web"), TTL: 30,
		Regions: []string{"us-east1", "europe-west1"},
		Zones:   []string{"us-east1-b/us-east1", "us-east1-c/us-east1", "europe-west1-b/europe-west1"},
	}
	for _, s := range shards {
		in.Clusters = append(in.Clusters, dnsendpoint.Cluster{
			Name: s.cluster, Region: "us-east1", Zones: []string{s.zone}, Weight: 1,
			Addresses: []netip.Addr{netip.MustParseAddr(s.lb)}, ClusterIPs: []netip.Addr{netip.MustParseAddr(s.clusterIP)},
			Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: 8080}},
		})
	}
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		panic(err) // fixed names that fit
	}
	obj := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kfed", "kfed.io/federation": federation},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps},
	}
	dnsendpoint.SetClusters(obj, table)
	return obj
}

// coreDNSServesFederatedNamesFromTheControlPlane
// (TestCoreDNSServesFederatedNamesFromTheControlPlane) runs a CoreDNS with
// the plugin over the control plane's DNSEndpoints, written by the test as
// the controller would, and checks what it answers as they change.
func coreDNSServesFederatedNamesFromTheControlPlane(t *testing.T, f *framework.Federation) {
	const ns = "served"
	w := namesOfWeb(ns)
	ctx := context.Background()
	cp := f.Client("federation")
	fedtest.Create(t, cp, framework.Namespace(ns), framework.Namespace("elsewhere"))
	binary := fedtest.BuildCoreDNS(t)
	srv, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: binary, Name: "coredns-cluster-1", Cluster: "cluster-1", Zone: fedtest.DNSZone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{
			Zone: fedtest.DNSZone, Federation: "e2e", Cluster: "cluster-1",
			Kubeconfig: fedtest.CoreDNSKubeconfig(t, f, "cluster-1"), Context: "federation",
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)

	// Another federation's object, created first: once ours is served, a
	// watch that selected it would have served it too.
	other := webDNSEndpoint(ns, "other", webShard{"cluster-1", "us-east1-b", "127.99.0.1", "10.99.0.1"})
	other.Namespace = "elsewhere"
	web := webDNSEndpoint(ns, "e2e", shard1, shard2)
	big := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}}
	fedtest.DeleteAtEnd(t, cp, other, web, big)
	if err := cp.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if err := cp.Create(ctx, web); err != nil {
		t.Fatal(err)
	}

	t.Run("names resolve within seconds of the DNSEndpoint appearing", func(t *testing.T) {
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			return fedtest.WantAddresses(srv.Addr, "udp", w.global, dns.TypeA, "10.96.0.11", "127.62.0.1")
		})
		t.Logf("served %v after the create", time.Since(created).Round(time.Millisecond))
	})

	t.Run("global, region and zone names answer over UDP and TCP", func(t *testing.T) {
		tests := []struct {
			name, qname string
			want        []string
		}{
			{"global name has both clusters, cluster-1 by cluster IP", w.global, []string{"10.96.0.11", "127.62.0.1"}},
			{"region name has the region's clusters", w.region, []string{"10.96.0.11", "127.62.0.1"}},
			{"own zone name has the own cluster's cluster IP", w.zoneB, []string{"10.96.0.11"}},
			{"other zone name has that zone's cluster", w.zoneC, []string{"127.62.0.1"}},
			{"per-cluster name of another cluster has its load balancer", "cluster-2." + w.global, []string{"127.62.0.1"}},
			{"zone without endpoints follows CNAMEs to region and global", w.europeB,
				[]string{"CNAME " + w.europe, "CNAME " + w.global, "10.96.0.11", "127.62.0.1"}},
		}
		for _, tt := range tests {
			for _, proto := range []string{"udp", "tcp"} {
				t.Run(tt.name+" over "+proto, func(t *testing.T) {
					if err := fedtest.WantAddresses(srv.Addr, proto, tt.qname, dns.TypeA, tt.want...); err != nil {
						t.Error(err)
					}
				})
			}
		}
	})

	t.Run("the own cluster is answered first", func(t *testing.T) {
		for range 20 {
			r, err := fedtest.Query(srv.Addr, "udp", w.global, dns.TypeA)
			if err != nil {
				t.Fatal(err)
			}
			if got := fedtest.AnswerStrings(r); len(got) == 0 || got[0] != "10.96.0.11" {
				t.Fatalf("answer %v does not start with cluster-1's cluster IP", got)
			}
		}
	})

	t.Run("SRV has the per-cluster names and their addresses", func(t *testing.T) {
		r, err := fedtest.Query(srv.Addr, "tcp", w.srv, dns.TypeSRV)
		if err != nil {
			t.Fatal(err)
		}
		got := append(fedtest.AnswerStrings(r), extraStrings(r)...)
		slices.Sort(got)
		want := []string{"0 1 8080 cluster-1." + w.global, "0 1 8080 cluster-2." + w.global, "10.96.0.11", "127.62.0.1"}
		if !slices.Equal(got, want) {
			t.Errorf("SRV answer and additional %v, want %v", got, want)
		}
	})

	t.Run("another federation's DNSEndpoints are not served", func(t *testing.T) {
		// elsewhere/web of federation "other" has the same names with
		// addresses of its own, 127.99.0.1 and 10.99.0.1.
		if err := fedtest.WantAddresses(srv.Addr, "udp", "cluster-1."+w.global, dns.TypeA, "10.96.0.11"); err != nil {
			t.Error(err)
		}
	})

	t.Run("a shard losing its ingress changes the answer without a restart", func(t *testing.T) {
		updated := webDNSEndpoint(ns, "e2e", shard1)
		if err := cp.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			t.Fatal(err)
		}
		web.Spec = updated.Spec
		if err := cp.Update(ctx, web); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			return errors.Join(
				fedtest.WantAddresses(srv.Addr, "udp", w.global, dns.TypeA, "10.96.0.11"),
				fedtest.WantAddresses(srv.Addr, "tcp", w.zoneC, dns.TypeA, "CNAME "+w.region, "10.96.0.11"),
				fedtest.WantRcode(srv.Addr, "cluster-2."+w.global, dns.RcodeNameError),
			)
		})
	})

	t.Run("a large answer is truncated over UDP and complete over TCP", func(t *testing.T) {
		var shards []webShard
		for i := range 40 {
			shards = append(shards, webShard{fmt.Sprintf("cluster-%02d", i+10), "us-east1-b", fmt.Sprintf("127.63.0.%d", i+1), "10.96.1.1"})
		}
		bigObj := webDNSEndpoint(ns, "e2e", shards...)
		bigObj.Name = "big"
		for i := range bigObj.Spec.Endpoints {
			bigObj.Spec.Endpoints[i].DNSName = strings.Replace(bigObj.Spec.Endpoints[i].DNSName, "web.", "big.", 1)
		}
		if err := cp.Create(ctx, bigObj); err != nil {
			t.Fatal(err)
		}
		bigName := strings.Replace(w.global, "web.", "big.", 1)
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			r, err := fedtest.Query(srv.Addr, "tcp", bigName, dns.TypeA)
			if err != nil {
				return err
			}
			if len(r.Answer) != 40 || r.Truncated {
				return fmt.Errorf("TCP: %d answers, TC %v; want 40, no TC", len(r.Answer), r.Truncated)
			}
			return nil
		})
		c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
		m := new(dns.Msg)
		m.SetQuestion(bigName, dns.TypeA)
		r, _, err := c.Exchange(m, srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		r.Compress = true // as it came: Len measures the wire form then
		if !r.Truncated || r.Len() > 512 {
			t.Errorf("UDP reply of %d octets, TC %v; want at most 512 with TC", r.Len(), r.Truncated)
		}
	})

	t.Run("deleting the DNSEndpoint makes its names NXDOMAIN", func(t *testing.T) {
		if err := cp.Delete(ctx, web); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			return errors.Join(
				fedtest.WantRcode(srv.Addr, w.global, dns.RcodeNameError),
				fedtest.WantRcode(srv.Addr, w.zoneB, dns.RcodeNameError),
			)
		})
	})
}

func extraStrings(r *dns.Msg) []string { return fedtest.RRStrings(r.Extra) }
