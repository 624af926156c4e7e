package deployments

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/route53fake"
)

// federatedDeploymentWeightsReachTheProviders
// (TestFederatedDeploymentWeightsReachTheProviders) runs a federated
// Deployment of 40 replicas weighted 3:1 over cluster-1 and cluster-2 (none
// in cluster-3) behind a federated Service, and checks that the weighted
// records of its global name carry the ready replicas per cluster, 30, 10
// and 0, in Route53 (through kfed-controller's DNS sync, at the local
// endpoint) and in Cloud DNS (a sync of the same DNSEndpoints against the
// local endpoint), and in the answer order of the CoreDNS plugin; then that,
// routed by proximity, Route53 gets the clusters' places instead, and back.
func federatedDeploymentWeightsReachTheProviders(t *testing.T, f *framework.Federation) {
	const zone = "kfed.test"
	r53 := route53fake.New()
	t.Cleanup(r53.Close)
	zoneID := r53.AddZone(zone, false)
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "fake", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	startController(t, f, manager.Options{
		Domain: zone, DNSInterval: 500 * time.Millisecond,
		DNS: dnssync.ProviderFlags{Provider: "route53", OwnerID: "fed", Route53Endpoint: r53.URL, Route53ZoneID: zoneID},
	})
	fed := f.Client("federation")
	for _, m := range fedtest.MemberNames {
		fedtest.WantCondition(t, fed, m, kfedv1alpha1.ClusterReady, "True", 30*time.Second)
	}
	const ns = "providers"
	deleteDeploymentsAtEnd(t, f, ns)
	fedtest.Create(t, fed, framework.Namespace(ns))
	web := fedtest.FederatedDeployment(ns, "web", 40, `{"rebalance": true, "clusters": {"cluster-1": {"weight": 3}, "cluster-2": {"weight": 1}}}`)
	svc := fedtest.FederatedService(ns, "web")
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc))
	fedtest.Create(t, fed, web, svc)
	want := map[string]int{"cluster-1": 30, "cluster-2": 10, "cluster-3": 0}
	fedtest.WantReadyLayout(t, f, client.ObjectKeyFromObject(web), []int32{30, 10, 0}, false, 40, 90*time.Second)
	fedtest.WantWeights(t, f, client.ObjectKeyFromObject(svc), want, 30*time.Second)
	global := "web." + ns + ".fed.svc." + zone

	t.Run("Route53 holds a weighted record set per cluster with its ready replicas", func(t *testing.T) {
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			got := map[string]int{}
			for _, rs := range r53.RecordSets(zoneID) {
				if strings.TrimSuffix(rs.Name, ".") == global && rs.Type == "A" && rs.Weight != nil {
					got[rs.SetIdentifier] = int(*rs.Weight)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("Route53 weights of %s: %v, want %v", global, got, want)
			}
			return nil
		})
	})

	t.Run("CoreDNS in cluster-3, which runs none, answers cluster-1 first three times in four and itself last", func(t *testing.T) {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(context.Background(), client.ObjectKeyFromObject(svc), &ep); err != nil {
			t.Fatal(err)
		}
		table, err := dnsendpoint.ReadClusters(&ep)
		if err != nil {
			t.Fatal(err)
		}
		owner := map[string]string{}
		for name, c := range table {
			for _, a := range c.Addresses {
				owner[a.String()] = name
			}
		}
		srv, err := f.StartCoreDNS(context.Background(), devenv.CoreDNSOptions{
			Binary: fedtest.BuildCoreDNS(t), Name: "coredns-cluster-3", Cluster: "cluster-3", Zone: zone,
			Corefile: devenv.KfedCorefile(devenv.KfedZone{
				Zone: zone, Federation: "fed", Cluster: "cluster-3",
				Kubeconfig: fedtest.CoreDNSKubeconfig(t, f, "cluster-3"), Context: "federation",
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Stop)
		framework.Eventually(t, 10*time.Second, func(context.Context) error {
			_, err := fedtest.Query(srv.Addr, "udp", global+".", dns.TypeA)
			return err
		})
		const n = 400
		first := map[string]int{}
		for range n {
			r, err := fedtest.Query(srv.Addr, "udp", global+".", dns.TypeA)
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, rr := range r.Answer {
				if a, ok := rr.(*dns.A); ok {
					order = append(order, owner[a.A.String()])
				}
			}
			if len(order) != 3 || order[2] != "cluster-3" {
				t.Fatalf("answer order %v: want three clusters, cluster-3 (weight 0) last", order)
			}
			first[order[0]]++
		}
		share := float64(first["cluster-1"]) / n
		t.Logf("first answer over %d queries: %v (cluster-1 %.2f, weights 30:10:0)", n, first, share)
		if share < 0.65 || share > 0.85 {
			t.Errorf("cluster-1 answered first in %.2f of queries, want about 0.75 (weights 30:10)", share)
		}
	})

	t.Run("Cloud DNS holds a weighted round robin item per cluster with its ready replicas", func(t *testing.T) {
		gcp, prov, planner := fedtest.CloudDNS(t, zone, "fed")
		var eps extdnsv1alpha1.DNSEndpointList
		if err := fed.List(context.Background(), &eps); err != nil {
			t.Fatal(err)
		}
		s := &dnssync.Syncer{Provider: prov, Planner: planner}
		if _, err := s.Sync(context.Background(), dnssync.Desired(tenancy.NewEndpoints("fed", nil), eps.Items), false); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, rs := range gcp.RecordSets("kfed-test", "kfed-test") {
			if strings.TrimSuffix(rs.Name, ".") == global && rs.Type == "A" && rs.RoutingPolicy != nil && rs.RoutingPolicy.Wrr != nil {
				for _, it := range rs.RoutingPolicy.Wrr.Items {
					got = append(got, int(it.Weight))
				}
			}
		}
		slices.Sort(got)
		if fmt.Sprint(got) != "[0 10 30]" {
			t.Errorf("Cloud DNS WRR weights of %s: %v, want 0, 10 and 30", global, got)
		}
	})

	t.Run("routed by proximity, Route53 holds geoproximity record sets at us-east1, cluster-3 (weight 0) out; routed by weight again, the weights return", func(t *testing.T) {
		setRouting := func(routing string) {
			framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
				var s corev1.Service
				if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &s); err != nil {
					return err
				}
				if routing == "" {
					delete(s.Annotations, kfedv1alpha1.AnnotationRouting)
				} else {
					if s.Annotations == nil {
						s.Annotations = map[string]string{}
					}
					s.Annotations[kfedv1alpha1.AnnotationRouting] = routing
				}
				return fed.Update(ctx, &s)
			})
		}
		setRouting(string(serviceconfig.RoutingProximity))
		// cluster-1 and cluster-2 are in us-east1, placed by the table at
		// Moncks Corner (33.20, -80.01).
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			var got []string
			for _, rs := range r53.RecordSets(zoneID) {
				if strings.TrimSuffix(rs.Name, ".") != global || rs.Type != "A" {
					continue
				}
				g := rs.GeoProximityLocation
				if g == nil || g.Coordinates == nil || rs.Weight != nil {
					return fmt.Errorf("Route53 %s A %s is not placed: %+v", global, rs.SetIdentifier, rs)
				}
				got = append(got, rs.SetIdentifier+"@"+g.Coordinates.Latitude+","+g.Coordinates.Longitude)
			}
			if want := "[cluster-1@33.2,-80.01 cluster-2@33.2,-80.01]"; fmt.Sprint(got) != want {
				return fmt.Errorf("Route53 geoproximity record sets of %s: %v, want %s", global, got, want)
			}
			return nil
		})
		batches := len(r53.Batches())
		time.Sleep(2 * time.Second) // four sync intervals: a stable plan sends nothing
		if n := len(r53.Batches()) - batches; n != 0 {
			t.Errorf("%d change batches sent to Route53 while nothing changed", n)
		}
		setRouting("")
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			got := map[string]int{}
			for _, rs := range r53.RecordSets(zoneID) {
				if strings.TrimSuffix(rs.Name, ".") == global && rs.Type == "A" && rs.Weight != nil && rs.GeoProximityLocation == nil {
					got[rs.SetIdentifier] = int(*rs.Weight)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("Route53 weights of %s: %v, want %v", global, got, want)
			}
			return nil
		})
	})
}
