package dnssync_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsroute53 "github.com/aws/aws-sdk-go-v2/service/route53"
	clouddnsapi "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/dns/dnsprovider/route53"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/clouddnsfake"
	"github.com/kfed-io/kfed/test/route53fake"
)

// proximityEndpoint is the DNSEndpoint of Service ns/web in us-east1 (two
// clusters) and europe-west1, routed by proximity or not.
func proximityEndpoint(t *testing.T, proximity bool) extdnsv1alpha1.DNSEndpoint {
	t.Helper()
	in := publish.Input{Names: publish.NewNames("fed", zone, "ns", "web"), Regions: []string{"us-east1", "europe-west1"}}
	for _, s := range []struct {
		cluster, region, ip string
		at                  geo.Point
	}{
		{"c1", "us-east1", "127.1.0.1", geo.Point{Latitude: 33.2, Longitude: -80.01}},
		{"c2", "us-east1", "127.2.0.1", geo.Point{Latitude: 33.2, Longitude: -80.01}},
		{"c3", "europe-west1", "127.3.0.1", geo.Point{Latitude: 50.45, Longitude: 3.82}},
	} {
		at := s.at
		in.Clusters = append(in.Clusters, dnsendpoint.Cluster{Name: s.cluster, Region: s.region, Addresses: []netip.Addr{netip.MustParseAddr(s.ip)}, Weight: 2, Location: &at})
	}
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		t.Fatal(err)
	}
	obj := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	dnsendpoint.SetClusters(&obj, table)
	if proximity {
		obj.Annotations[dnsendpoint.AnnotationRouting] = dnsendpoint.RoutingProximity
	}
	return obj
}

// TestProximityReachesManagedDNSAndStaysStable publishes a Service through
// the real SDKs to the local Route53 and Cloud DNS endpoints as it switches
// from weighted to proximity routing and back: each switch converges, the
// next sync sends nothing, a fresh listing plans nothing, and a record kfed
// does not own stays as it was.
func TestProximityReachesManagedDNSAndStaysStable(t *testing.T) {
	ctx := context.Background()
	reg, err := dnsprovider.NewRegistry("fed", "")
	if err != nil {
		t.Fatal(err)
	}
	unowned := dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "www." + zone, Type: "A", TTL: 300, Targets: []string{"192.0.2.10"}})
	providers := []struct {
		name string
		new  func(t *testing.T) dnsprovider.Provider
	}{
		{"route53", func(t *testing.T) dnsprovider.Provider {
			fake := route53fake.New()
			t.Cleanup(fake.Close)
			id := fake.AddZone(zone, false)
			c := awsroute53.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")},
				func(o *awsroute53.Options) { o.BaseEndpoint = aws.String(fake.URL) })
			return route53.New(c, route53.Config{ZoneIDs: []string{id}, RequestsPerSecond: 1000})
		}},
		{"clouddns", func(t *testing.T) dnsprovider.Provider {
			fake := clouddnsfake.New()
			t.Cleanup(fake.Close)
			fake.AddZone("p", "kfed-test", zone+".")
			svc, err := clouddnsapi.NewService(ctx, option.WithEndpoint(fake.URL+"/"), option.WithoutAuthentication())
			if err != nil {
				t.Fatal(err)
			}
			p, err := clouddns.New(svc, clouddns.Config{Project: "p"})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	global := "web.ns.fed.svc." + zone
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			prov := pv.new(t)
			zones, err := prov.Zones(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cs := zones[0].NewChangeset()
			cs.Add(dnsprovider.Change{Action: dnsprovider.Create, New: unowned, Group: unowned.Name})
			if err := cs.Apply(ctx); err != nil {
				t.Fatal(err)
			}
			s := &dnssync.Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: reg}}
			for _, proximity := range []bool{false, true, false, true} {
				desired := dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{proximityEndpoint(t, proximity)})
				if _, err := s.Sync(ctx, desired, false); err != nil {
					t.Fatalf("proximity %v: %v", proximity, err)
				}
				before := prov.Stats().Requests
				if res, err := s.Sync(ctx, desired, false); err != nil || res.Changes() != 0 || prov.Stats().Requests != before {
					t.Errorf("proximity %v: the second sync made %d changes with %d requests (%v)", proximity, res.Changes(), prov.Stats().Requests-before, err)
				}
				fresh := &dnssync.Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: reg}}
				res, err := fresh.Sync(ctx, desired, true)
				if err != nil || res.Changes() != 0 {
					t.Errorf("proximity %v: a fresh listing plans %d changes (%v): %v", proximity, res.Changes(), err, res.Plans)
				}
				listed, err := zones[0].Records(ctx)
				if err != nil {
					t.Fatal(err)
				}
				placed, weighted, theirs := 0, 0, 0
				for _, rs := range listed {
					switch {
					case rs.Name == global && rs.Type == "A" && rs.Location != nil:
						placed++
					case rs.Name == global && rs.Type == "A":
						weighted++
					case rs.Equal(unowned):
						theirs++
					}
				}
				// Cloud DNS puts c1 and c2 under us-east1's item: two items.
				wantPlaced, wantWeighted := 0, 3
				if proximity {
					wantPlaced, wantWeighted = map[string]int{"route53": 3, "clouddns": 2}[pv.name], 0
				}
				if placed != wantPlaced || weighted != wantWeighted || theirs != 1 {
					t.Errorf("proximity %v: %s A has %d placed and %d weighted record sets, the unowned record %d times", proximity, global, placed, weighted, theirs)
				}
			}
		})
	}
}
