package dnssync_test

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/bindtest"
)

const zone = "kfed.test"

// endpointFor is the DNSEndpoint the services controller writes for Service
// ns/web placed in the given clusters (each with one address).
func endpointFor(t *testing.T, clusters map[string]string) extdnsv1alpha1.DNSEndpoint {
	t.Helper()
	in := publish.Input{Names: publish.NewNames("fed", zone, "ns", "web"), Regions: []string{"r1"}, Zones: []string{"z1/r1"}}
	for name, ip := range clusters {
		in.Clusters = append(in.Clusters, dnsendpoint.Cluster{Name: name, Region: "r1", Zones: []string{"z1"}, Addresses: []netip.Addr{netip.MustParseAddr(ip)}, Weight: 1,
			Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: 80}}})
	}
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		t.Fatal(err)
	}
	obj := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	dnsendpoint.SetClusters(&obj, table)
	return obj
}

// countingProvider counts the zone listings and change sets sent.
func newSyncer(t *testing.T, srv *bindtest.Server) (*dnssync.Syncer, *rfc2136.Provider) {
	t.Helper()
	p, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: srv.SecretFile})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := dnsprovider.NewRegistry("fed", "")
	if err != nil {
		t.Fatal(err)
	}
	return &dnssync.Syncer{Provider: p, Planner: dnsprovider.Planner{Registry: reg}}, p
}

func TestSyncPublishesToBINDAndStaysQuietInSteadyState(t *testing.T) {
	srv := bindtest.Start(t, zone)
	s, p := newSyncer(t, srv)
	ctx := context.Background()
	global := "web.ns.fed.svc." + zone

	two := endpointFor(t, map[string]string{"c1": "127.1.0.1", "c2": "127.2.0.1"})
	res, err := s.Sync(ctx, dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{two}), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes() == 0 || res.Listed != 1 {
		t.Fatalf("first sync: %d changes, %d listings", res.Changes(), res.Listed)
	}
	if got := srv.Answers(t, global, dns.TypeA); !slices.Equal(got, []string{"127.1.0.1", "127.2.0.1"}) {
		t.Errorf("BIND answers %s A %v", global, got)
	}
	if got := srv.Answers(t, "_http._tcp."+global, dns.TypeSRV); len(got) != 2 {
		t.Errorf("BIND answers SRV %v", got)
	}

	t.Run("nothing changed: no request at all", func(t *testing.T) {
		before := p.Stats().Requests
		res, err := s.Sync(ctx, dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{two}), false)
		if err != nil {
			t.Fatal(err)
		}
		if sent := p.Stats().Requests - before; sent != 0 || res.Listed != 0 || res.Changes() != 0 {
			t.Errorf("steady state sent %d requests, listed %d zones, planned %d changes", sent, res.Listed, res.Changes())
		}
	})

	t.Run("a cluster leaves: only its targets go, in one request", func(t *testing.T) {
		before := p.Stats().Requests
		one := endpointFor(t, map[string]string{"c1": "127.1.0.1"})
		if _, err := s.Sync(ctx, dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{one}), false); err != nil {
			t.Fatal(err)
		}
		if sent := p.Stats().Requests - before; sent != 1 {
			t.Errorf("sent %d requests, want 1", sent)
		}
		if got := srv.Answers(t, global, dns.TypeA); !slices.Equal(got, []string{"127.1.0.1"}) {
			t.Errorf("BIND answers %v", got)
		}
		if got := srv.Answers(t, "c2."+global, dns.TypeA); len(got) != 0 {
			t.Errorf("c2's name still answers %v", got)
		}
	})

	t.Run("the cache is re-listed after Relist", func(t *testing.T) {
		s.Clock = clocktesting.NewFakePassiveClock(time.Now().Add(2 * time.Hour))
		res, err := s.Sync(ctx, dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{endpointFor(t, map[string]string{"c1": "127.1.0.1"})}), false)
		if err != nil || res.Listed != 1 || res.Changes() != 0 {
			t.Errorf("after an hour: listed %d, %d changes, %v", res.Listed, res.Changes(), err)
		}
	})
}

func TestSyncNeverTouchesARecordItDoesNotOwn(t *testing.T) {
	srv := bindtest.Start(t, zone)
	s, _ := newSyncer(t, srv)
	ctx := context.Background()
	global := "web.ns.fed.svc." + zone
	// Someone else's record at the global name, without kfed's mark.
	theirs := dnsprovider.RecordSet{Name: global, Type: "A", TTL: 300, Targets: []string{"192.0.2.10"}}
	p, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: srv.SecretFile})
	if err != nil {
		t.Fatal(err)
	}
	zones, err := p.Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs := zones[0].NewChangeset()
	cs.Add(dnsprovider.Change{Action: dnsprovider.Create, New: dnsprovider.MustNormalize(theirs), Group: global})
	if err := cs.Apply(ctx); err != nil {
		t.Fatal(err)
	}

	res, err := s.Sync(ctx, dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{endpointFor(t, map[string]string{"c1": "127.1.0.1"})}), false)
	if err != nil {
		t.Fatal(err)
	}
	conflicts := res.Conflicts()
	if len(conflicts) != 1 || conflicts[0].Name != global || conflicts[0].Resource != "ns/web" {
		t.Errorf("conflicts %v, want one at %s for ns/web", conflicts, global)
	}
	if got := srv.Answers(t, global, dns.TypeA); !slices.Equal(got, []string{"192.0.2.10"}) {
		t.Errorf("the unowned record changed: %v", got)
	}
	// The names nobody else holds are published.
	if got := srv.Answers(t, "c1."+global, dns.TypeA); !slices.Equal(got, []string{"127.1.0.1"}) {
		t.Errorf("c1's name answers %v", got)
	}
}

func TestDesiredSplitsAddressesByCluster(t *testing.T) {
	const global = "web.ns.fed.svc.kfed.test"
	newLayout := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: extdnsv1alpha1.DNSEndpointSpec{
		Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: global, RecordType: "A", Targets: []string{"127.5.0.1", "127.6.0.1", "192.0.2.1"}, RecordTTL: 60},
			{DNSName: "_http._tcp." + global, RecordType: "SRV", Targets: []string{"0 3 80 aws." + global + "."}, RecordTTL: 60},
		},
	}}
	dnsendpoint.SetClusters(&newLayout, []dnsendpoint.Cluster{
		{Name: "aws", Weight: 3, Addresses: []netip.Addr{netip.MustParseAddr("127.5.0.1")}, Hostname: "lb-1.us-east-1.elb.amazonaws.com"},
		{Name: "gcp", Weight: 0, Addresses: []netip.Addr{netip.MustParseAddr("127.6.0.1")}},
	})
	legacy := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: extdnsv1alpha1.DNSEndpointSpec{
		Endpoints: []extdnsv1alpha1.Endpoint{{
			DNSName: global, RecordType: "A", Targets: []string{"127.5.0.1"}, SetIdentifier: "aws", RecordTTL: 60,
			ProviderSpecific: []extdnsv1alpha1.ProviderSpecificProperty{
				{Name: "kfed.io/weight", Value: "3"}, {Name: "kfed.io/hostname", Value: "lb-1.us-east-1.elb.amazonaws.com"},
			},
		}},
	}}
	aws := dnsprovider.RecordSet{Name: global, Type: "A", TTL: 60, Targets: []string{"127.5.0.1"},
		SetIdentifier: "aws", Weight: 3, Hostname: "lb-1.us-east-1.elb.amazonaws.com", Resource: "ns/web"}
	tests := []struct {
		name string
		in   extdnsv1alpha1.DNSEndpoint
		want []dnsprovider.RecordSet
	}{
		{"each cluster's addresses are a weighted set; unclaimed ones and SRV plain sets", newLayout, []dnsprovider.RecordSet{
			aws,
			{Name: global, Type: "A", TTL: 60, Targets: []string{"127.6.0.1"}, SetIdentifier: "gcp", Weight: 0, Resource: "ns/web"},
			{Name: global, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, Resource: "ns/web"},
			{Name: "_http._tcp." + global, Type: "SRV", TTL: 60, Targets: []string{"0 3 80 aws." + global + "."}, Resource: "ns/web"},
		}},
		{"the older per-cluster layout keeps weight and hostname", legacy, []dnsprovider.RecordSet{aws}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{tt.in})
			if len(got) != len(tt.want) {
				t.Fatalf("got %d record sets, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if !got[i].Equal(tt.want[i]) || got[i].Hostname != tt.want[i].Hostname || got[i].Resource != tt.want[i].Resource {
					t.Errorf("record set %d\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// Fresh is what lets the controller skip a pass over a federation in which
// nothing changed: it must turn false whenever the next Sync would list a zone
// again, or a change made behind kfed's back would never be seen.
func TestSyncerIsFreshOnlyWhileItsListingsAreTrusted(t *testing.T) {
	srv := bindtest.Start(t, zone)
	s, _ := newSyncer(t, srv)
	ctx := context.Background()
	now := clocktesting.NewFakePassiveClock(time.Now())
	s.Clock = now
	desired := dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{endpointFor(t, map[string]string{"c1": "127.1.0.1"})})
	sync := func(t *testing.T) {
		if _, err := s.Sync(ctx, desired, false); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name  string
		do    func(t *testing.T)
		fresh bool
	}{
		{"before the first sync nothing is listed", func(*testing.T) {}, false},
		{"after a sync its listing is trusted", sync, true},
		{"just before Relist it still is", func(*testing.T) { now.SetTime(now.Now().Add(time.Hour - time.Second)) }, true},
		{"at Relist it is not", func(*testing.T) { now.SetTime(now.Now().Add(time.Second)) }, false},
		{"a sync lists again", sync, true},
		{"after Invalidate (a failed precondition) it is not", func(*testing.T) { s.Invalidate() }, false},
	}
	for _, st := range steps {
		st.do(t)
		if got := s.Fresh(); got != st.fresh {
			t.Fatalf("%s: Fresh() = %v, want %v", st.name, got, st.fresh)
		}
	}
}

// An intruder's DNSEndpoint that names another namespace's Service and a
// name no tenant owns adds nothing to what is published; its own names are
// published.
func TestDesiredPublishesOnlyWhatEachNamespaceMayPublish(t *testing.T) {
	owner := endpointFor(t, map[string]string{"c1": "127.1.0.1"})
	global := publish.NewNames("fed", zone, "ns", "web").Global()
	intruder := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "intruder", Name: "x"},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: global, RecordType: "A", Targets: []string{"198.51.100.66"}},
			{DNSName: "www." + zone, RecordType: "A", Targets: []string{"198.51.100.67"}},
			{DNSName: "x.intruder.fed.svc." + zone, RecordType: "A", Targets: []string{"198.51.100.68"}},
		}}}
	tests := []struct {
		name    string
		trusted []string
		want    map[string][]string // name: targets
	}{
		{"a tenant publishes its own names only", nil, map[string][]string{
			global: {"127.1.0.1"}, "www." + zone: nil, "x.intruder.fed.svc." + zone: {"198.51.100.68"},
		}},
		{"a trusted namespace publishes other names too, not a tenant's", []string{"intruder"}, map[string][]string{
			global: {"127.1.0.1"}, "www." + zone: {"198.51.100.67"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string][]string{}
			for _, rs := range dnssync.Desired(tenancy.NewEndpoints("fed", tt.trusted), []extdnsv1alpha1.DNSEndpoint{intruder, owner}) {
				if rs.Type == "A" {
					got[rs.Name] = append(got[rs.Name], rs.Targets...)
				}
			}
			for name, want := range tt.want {
				if !slices.Equal(got[name], want) {
					t.Errorf("%s publishes %v, want %v", name, got[name], want)
				}
			}
		})
	}
}

func TestDesiredPlacesTheGlobalNameOfAServiceRoutedByProximity(t *testing.T) {
	in := publish.Input{Names: publish.NewNames("fed", zone, "ns", "web"), Regions: []string{"us-east1", "europe-west1"}}
	for _, s := range []struct {
		cluster, region, ip string
		at                  *geo.Point
	}{
		{"c1", "us-east1", "127.1.0.1", &geo.Point{Latitude: 33.2, Longitude: -80.01}},
		{"c3", "europe-west1", "127.3.0.1", &geo.Point{Latitude: 50.45, Longitude: 3.82}},
	} {
		in.Clusters = append(in.Clusters, dnsendpoint.Cluster{Name: s.cluster, Region: s.region, Addresses: []netip.Addr{netip.MustParseAddr(s.ip)}, Weight: 1, Location: s.at})
	}
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		t.Fatal(err)
	}
	obj := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	dnsendpoint.SetClusters(&obj, table)

	placed := func(obj extdnsv1alpha1.DNSEndpoint) []string {
		var out []string
		for _, rs := range dnssync.Desired(tenancy.NewEndpoints("fed", nil), []extdnsv1alpha1.DNSEndpoint{obj}) {
			if rs.Location != nil {
				out = append(out, rs.Name+" "+rs.SetIdentifier+" "+rs.Location.String())
			}
		}
		return out
	}
	if got := placed(obj); len(got) != 0 {
		t.Errorf("a weighted Service's records are placed: %v", got)
	}
	obj.Annotations[dnsendpoint.AnnotationRouting] = dnsendpoint.RoutingProximity
	want := []string{"web.ns.fed.svc.kfed.test c1 33.2,-80.01", "web.ns.fed.svc.kfed.test c3 50.45,3.82"}
	if got := placed(obj); !slices.Equal(got, want) {
		t.Errorf("placed record sets %q, want only the global name's %q", got, want)
	}
}
