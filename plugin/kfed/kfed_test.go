package kfed

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/internal/geo/regions"
)

// The test federation "dev" under kfed.test: Service default/demo with
// shards in cluster-1 (us-east1-b), cluster-2 (us-east1-c) and cluster-3
// (europe-west1-b, weight 0), seen from inside cluster-1.
const (
	zone    = "kfed.test."
	global  = "demo.default.dev.svc.kfed.test."
	useast  = "demo.default.dev.svc.us-east1.kfed.test."
	useastB = "demo.default.dev.svc.us-east1-b.us-east1.kfed.test."
	europe  = "demo.default.dev.svc.europe-west1.kfed.test."
	europeC = "demo.default.dev.svc.europe-west1-c.europe-west1.kfed.test."
	asia    = "demo.default.dev.svc.asia-east1.kfed.test."
	asiaA   = "demo.default.dev.svc.asia-east1-a.asia-east1.kfed.test."
	srvName = "_http._tcp.demo.default.dev.svc.kfed.test."
	owner   = "kfed-owner.demo.default.dev.svc.kfed.test."
	elb     = "elb.default.dev.svc.kfed.test."
	dangle  = "dangling.default.dev.svc.kfed.test."
	big     = "big.default.dev.svc.kfed.test."
)

func shardEndpoint(name, cluster, zones string, weight int, target string, clusterIPs string) extdnsv1alpha1.Endpoint {
	typ := "A"
	if strings.Contains(target, ":") {
		typ = "AAAA"
	}
	props := []extdnsv1alpha1.ProviderSpecificProperty{
		{Name: "kfed.io/cluster", Value: cluster},
		{Name: "kfed.io/region", Value: zones[:strings.LastIndexByte(zones, '-')]},
		{Name: "kfed.io/zone", Value: zones},
		{Name: "kfed.io/weight", Value: fmt.Sprint(weight)},
	}
	if clusterIPs != "" {
		props = append(props, extdnsv1alpha1.ProviderSpecificProperty{Name: "kfed.io/cluster-ip", Value: clusterIPs})
	}
	return extdnsv1alpha1.Endpoint{
		DNSName: strings.TrimSuffix(name, "."), RecordType: typ, Targets: []string{target},
		SetIdentifier: cluster, RecordTTL: 30, ProviderSpecific: props,
	}
}

func sharedEndpoint(name, typ string, targets ...string) extdnsv1alpha1.Endpoint {
	return extdnsv1alpha1.Endpoint{DNSName: strings.TrimSuffix(name, "."), RecordType: typ, Targets: targets, RecordTTL: 30}
}

// demoEndpoints are what the services controller would write for demo.
func demoEndpoints() []extdnsv1alpha1.Endpoint {
	c1 := func(name string) extdnsv1alpha1.Endpoint {
		return shardEndpoint(name, "cluster-1", "us-east1-b", 1, "127.101.0.1", "10.96.0.10")
	}
	c2 := func(name string) extdnsv1alpha1.Endpoint {
		return shardEndpoint(name, "cluster-2", "us-east1-c", 2, "127.102.0.1", "10.97.0.10")
	}
	c3 := func(name string) extdnsv1alpha1.Endpoint {
		return shardEndpoint(name, "cluster-3", "europe-west1-b", 0, "127.103.0.1", "10.98.0.10")
	}
	return []extdnsv1alpha1.Endpoint{
		c1(global), c2(global), c3(global),
		shardEndpoint(global, "cluster-1", "us-east1-b", 1, "fd00::101", ""),
		c1("cluster-1." + global), c2("cluster-2." + global), c3("cluster-3." + global),
		c1(useast), c2(useast), c3(europe),
		c1(useastB),
		sharedEndpoint(europeC, "CNAME", strings.TrimSuffix(europe, ".")),
		sharedEndpoint(asia, "CNAME", strings.TrimSuffix(global, ".")),
		sharedEndpoint(asiaA, "CNAME", strings.TrimSuffix(asia, ".")),
		sharedEndpoint(srvName, "SRV", "0 1 8080 cluster-1."+strings.TrimSuffix(global, "."), "0 2 8080 cluster-2."+strings.TrimSuffix(global, ".")),
		sharedEndpoint(owner, "TXT", `"heritage=kfed,kfed/owner=dev"`),
		sharedEndpoint(elb, "CNAME", "a1b2.elb.us-east-1.amazonaws.com"),
		sharedEndpoint(dangle, "CNAME", "gone.default.dev.svc.kfed.test"),
	}
}

// bigEndpoints has more addresses at one name than a 512-octet reply holds.
func bigEndpoints() []extdnsv1alpha1.Endpoint {
	var eps []extdnsv1alpha1.Endpoint
	for i := range 60 {
		eps = append(eps, shardEndpoint(big, fmt.Sprintf("cluster-%02d", i), "us-east1-b", 1, fmt.Sprintf("127.200.0.%d", i+1), ""))
	}
	return eps
}

// newTestKfed returns a synced plugin for zone kfed.test seen from cluster,
// filled with objects.
func newTestKfed(t testing.TB, cluster string, objects map[string][]extdnsv1alpha1.Endpoint) *Kfed {
	t.Helper()
	k := newKfed(config{zones: []string{zone}, federation: "dev", cluster: cluster, ttl: 30})
	for key, eps := range objects {
		// Every Service routed by proximity, as a DNSEndpoint with
		// kfed.io/routing: proximity is parsed.
		if err := k.index.SetObject(key, k.index.ParseRouted(eps, locatedTable(t, eps), true)); err != nil {
			t.Fatal(err)
		}
	}
	k.synced.Store(true)
	return k
}

// locatedTable is the cluster table of eps, endpoints of the per-cluster
// layout, with each cluster at its region's place, as the services
// controller writes the table: the plugin reads it as the watch does.
func locatedTable(t testing.TB, eps []extdnsv1alpha1.Endpoint) dnsendpoint.Clusters {
	t.Helper()
	table, err := dnsendpoint.ReadClusters(&extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range table {
		if p, ok := regions.Lookup(c.Region); ok {
			c.Location = &p
		}
	}
	return table
}

// serve sends m to k as CoreDNS's server does, through a ScrubWriter that
// fits the reply to the client's buffer.
func serve(t testing.TB, k *Kfed, m *dns.Msg, tcp bool) (*dns.Msg, int, error) {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{TCP: tcp})
	rcode, err := k.ServeDNS(context.Background(), request.NewScrubWriter(m, rec), m)
	return rec.Msg, rcode, err
}

var soa = test.SOA(zone + "\t30\tIN\tSOA\tns.dns.kfed.test. hostmaster.kfed.test. 1 300 60 1209600 30")

func TestServeDNSAnswers(t *testing.T) {
	k := newTestKfed(t, "cluster-1", map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()})
	tests := []struct {
		name string
		test.Case
	}{
		{"global name answers every cluster, its own by cluster IP", test.Case{
			Qname: global, Qtype: dns.TypeA,
			Answer: []dns.RR{
				test.A(global + "\t30\tIN\tA\t10.96.0.10"),
				test.A(global + "\t30\tIN\tA\t127.102.0.1"),
				test.A(global + "\t30\tIN\tA\t127.103.0.1"),
			},
		}},
		{"global AAAA answers the own cluster's target when it has no IPv6 cluster IP", test.Case{
			Qname: global, Qtype: dns.TypeAAAA,
			Answer: []dns.RR{test.AAAA(global + "\t30\tIN\tAAAA\tfd00::101")},
		}},
		{"region name answers the clusters of the region", test.Case{
			Qname: useast, Qtype: dns.TypeA,
			Answer: []dns.RR{
				test.A(useast + "\t30\tIN\tA\t10.96.0.10"),
				test.A(useast + "\t30\tIN\tA\t127.102.0.1"),
			},
		}},
		{"zone name answers the clusters of the zone", test.Case{
			Qname: useastB, Qtype: dns.TypeA,
			Answer: []dns.RR{test.A(useastB + "\t30\tIN\tA\t10.96.0.10")},
		}},
		{"query name case does not matter", test.Case{
			Qname: strings.ToUpper(useastB), Qtype: dns.TypeA,
			Answer: []dns.RR{test.A(useastB + "\t30\tIN\tA\t10.96.0.10")},
		}},
		{"zone without endpoint answers CNAME to region and the region's addresses", test.Case{
			Qname: europeC, Qtype: dns.TypeA,
			Answer: []dns.RR{
				test.CNAME(europeC + "\t30\tIN\tCNAME\t" + europe),
				test.A(europe + "\t30\tIN\tA\t127.103.0.1"),
			},
		}},
		{"CNAME chain is followed through region to global in one answer", test.Case{
			Qname: asiaA, Qtype: dns.TypeA,
			Answer: []dns.RR{
				test.CNAME(asiaA + "\t30\tIN\tCNAME\t" + asia),
				test.CNAME(asia + "\t30\tIN\tCNAME\t" + global),
				test.A(global + "\t30\tIN\tA\t10.96.0.10"),
				test.A(global + "\t30\tIN\tA\t127.102.0.1"),
				test.A(global + "\t30\tIN\tA\t127.103.0.1"),
			},
		}},
		{"CNAME query answers the CNAME alone", test.Case{
			Qname: europeC, Qtype: dns.TypeCNAME,
			Answer: []dns.RR{test.CNAME(europeC + "\t30\tIN\tCNAME\t" + europe)},
		}},
		{"CNAME out of the zone is answered for the client to follow", test.Case{
			Qname: elb, Qtype: dns.TypeA,
			Answer: []dns.RR{test.CNAME(elb + "\t30\tIN\tCNAME\ta1b2.elb.us-east-1.amazonaws.com.")},
		}},
		{"CNAME to a name that does not exist is NXDOMAIN with the CNAME", test.Case{
			Qname: dangle, Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Answer: []dns.RR{test.CNAME(dangle + "\t30\tIN\tCNAME\tgone.default.dev.svc.kfed.test.")},
			Ns:     []dns.RR{soa},
		}},
		{"CNAME chain ending without the type is NODATA with the chain", test.Case{
			Qname: europeC, Qtype: dns.TypeAAAA,
			Answer: []dns.RR{test.CNAME(europeC + "\t30\tIN\tCNAME\t" + europe)},
			Ns:     []dns.RR{soa},
		}},
		{"SRV answers each cluster's port with target addresses in additional", test.Case{
			Qname: srvName, Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV(srvName + "\t30\tIN\tSRV\t0 1 8080 cluster-1." + global),
				test.SRV(srvName + "\t30\tIN\tSRV\t0 2 8080 cluster-2." + global),
			},
			Extra: []dns.RR{
				test.A("cluster-1." + global + "\t30\tIN\tA\t10.96.0.10"),
				test.A("cluster-2." + global + "\t30\tIN\tA\t127.102.0.1"),
			},
		}},
		{"TXT is answered where a DNSEndpoint has it", test.Case{
			Qname: owner, Qtype: dns.TypeTXT,
			Answer: []dns.RR{test.TXT(owner + "\t30\tIN\tTXT\t\"heritage=kfed,kfed/owner=dev\"")},
		}},
		{"TXT where no DNSEndpoint has it is NODATA", test.Case{
			Qname: global, Qtype: dns.TypeTXT, Ns: []dns.RR{soa},
		}},
		{"type the name lacks is NODATA", test.Case{
			Qname: global, Qtype: dns.TypeMX, Ns: []dns.RR{soa},
		}},
		{"empty non-terminal is NODATA", test.Case{
			Qname: "default.dev.svc.kfed.test.", Qtype: dns.TypeA, Ns: []dns.RR{soa},
		}},
		{"name that does not exist is NXDOMAIN", test.Case{
			Qname: "nope.default.dev.svc.kfed.test.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa},
		}},
		{"name below a name with records does not exist", test.Case{
			Qname: "x." + global, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa},
		}},
		{"apex answers SOA", test.Case{
			Qname: zone, Qtype: dns.TypeSOA, Answer: []dns.RR{soa},
		}},
		{"apex answers NS", test.Case{
			Qname: zone, Qtype: dns.TypeNS, Answer: []dns.RR{test.NS(zone + "\t30\tIN\tNS\tns.dns.kfed.test.")},
		}},
		{"apex without the type is NODATA", test.Case{
			Qname: zone, Qtype: dns.TypeA, Ns: []dns.RR{soa},
		}},
		{"name server answers with the address the query came to", test.Case{
			Qname: "ns.dns.kfed.test.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("ns.dns.kfed.test.\t30\tIN\tA\t127.0.0.1")},
		}},
		{"name server's parent is an empty non-terminal", test.Case{
			Qname: "dns.kfed.test.", Qtype: dns.TypeA, Ns: []dns.RR{soa},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.Authoritative = true
			resp, rcode, err := serve(t, k, tt.Msg(), false)
			if err != nil || rcode != dns.RcodeSuccess {
				t.Fatalf("ServeDNS = %d, %v", rcode, err)
			}
			if !resp.Authoritative || resp.Truncated {
				t.Errorf("AA %v, TC %v; want AA and no TC", resp.Authoritative, resp.Truncated)
			}
			if err := test.CNAMEOrder(resp); err != nil {
				t.Error(err)
			}
			if err := test.SortAndCheck(resp, tt.Case); err != nil {
				t.Errorf("%v\n%v", err, resp)
			}
		})
	}
}

func TestServeDNSOrdersLocalClusterFirstAndWeightZeroLast(t *testing.T) {
	k := newTestKfed(t, "cluster-1", map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()})
	for range 50 {
		resp, _, _ := serve(t, k, test.Case{Qname: global, Qtype: dns.TypeA}.Msg(), false)
		got := make([]string, len(resp.Answer))
		for i, rr := range resp.Answer {
			got[i] = rr.(*dns.A).A.String()
		}
		if len(got) != 3 || got[0] != "10.96.0.10" || got[2] != "127.103.0.1" {
			t.Fatalf("answer order %v; want cluster-1's cluster IP first and weight-0 cluster-3 last", got)
		}
	}
}

func TestServeDNSOrdersClustersByTierFromItsOwnCluster(t *testing.T) {
	var eps []extdnsv1alpha1.Endpoint
	for _, c := range []struct{ name, zone, lb string }{
		{"cluster-1", "us-east1-b", "127.101.0.1"}, {"cluster-2", "us-east1-c", "127.102.0.1"},
		{"cluster-3", "europe-west1-b", "127.103.0.1"}, {"cluster-4", "asia-east1-a", "127.104.0.1"},
		{"cluster-5", "us-east1-b", "127.105.0.1"},
	} {
		eps = append(eps, shardEndpoint(global, c.name, c.zone, 1, c.lb, ""))
	}
	const c1, c2, c3, c4, c5 = "127.101.0.1", "127.102.0.1", "127.103.0.1", "127.104.0.1", "127.105.0.1"
	tests := []struct {
		name    string
		cluster string
		want    [][]string // each answer's tier: the addresses it may hold, in any order
	}{
		{"cluster-1: itself, its zone, its region, then the rest", "cluster-1", [][]string{{c1}, {c5}, {c2}, {c3, c4}}},
		{"cluster-2: itself, its region's other zone, then the rest", "cluster-2", [][]string{{c2}, {c1, c5}, {c3, c4}}},
		{"cluster-3: itself, then everyone else by weight", "cluster-3", [][]string{{c3}, {c1, c2, c4, c5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKfed(t, tt.cluster, map[string][]extdnsv1alpha1.Endpoint{"default/demo": eps})
			orders := map[string]bool{}
			for range 200 {
				resp, _, _ := serve(t, k, test.Case{Qname: global, Qtype: dns.TypeA}.Msg(), false)
				var got []string
				for _, rr := range resp.Answer {
					got = append(got, rr.(*dns.A).A.String())
				}
				i := 0
				for _, tier := range tt.want {
					if i+len(tier) > len(got) {
						t.Fatalf("answer %v is short of tier %v", got, tier)
					}
					part := slices.Sorted(slices.Values(got[i : i+len(tier)]))
					if !slices.Equal(part, slices.Sorted(slices.Values(tier))) {
						t.Fatalf("answer %v: places %d to %d hold %v, want the tier %v", got, i, i+len(tier)-1, part, tier)
					}
					i += len(tier)
				}
				orders[strings.Join(got, " ")] = true
			}
			if len(orders) < 2 {
				t.Errorf("every answer was %v: the clusters of a tier are not drawn by weight", orders)
			}
		})
	}
}

func TestServeDNSTruncatesOverUDPAndAnswersInFullOverTCP(t *testing.T) {
	k := newTestKfed(t, "", map[string][]extdnsv1alpha1.Endpoint{"default/big": bigEndpoints()})
	withEDNS := func(size uint16) *dns.Msg {
		m := test.Case{Qname: big, Qtype: dns.TypeA}.Msg()
		m.SetEdns0(size, false)
		return m
	}
	tests := []struct {
		name          string
		msg           *dns.Msg
		tcp           bool
		wantTruncated bool
		wantMaxLen    int
	}{
		{"UDP without EDNS0 fits 512 octets with TC set", test.Case{Qname: big, Qtype: dns.TypeA}.Msg(), false, true, 512},
		{"UDP with a 4096-octet EDNS0 buffer fits whole", withEDNS(4096), false, false, 4096},
		{"UDP with a 700-octet EDNS0 buffer is cut to it with TC set", withEDNS(700), false, true, 700},
		{"TCP answers in full", test.Case{Qname: big, Qtype: dns.TypeA}.Msg(), true, false, 65535},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _, err := serve(t, k, tt.msg, tt.tcp)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Truncated != tt.wantTruncated {
				t.Errorf("TC %v, want %v", resp.Truncated, tt.wantTruncated)
			}
			if n := resp.Len(); n > tt.wantMaxLen {
				t.Errorf("reply is %d octets, over %d", n, tt.wantMaxLen)
			}
			if full := !tt.wantTruncated; full && len(resp.Answer) != 60 {
				t.Errorf("%d answers, want all 60", len(resp.Answer))
			}
		})
	}
}

func TestServeDNSFallsThroughOnlyWhereConfigured(t *testing.T) {
	next := test.NextHandler(dns.RcodeRefused, nil)
	tests := []struct {
		name      string
		fall      fall.F
		qname     string
		wantRcode int // returned by ServeDNS: Refused means next answered
	}{
		{"without fallthrough a missing name is NXDOMAIN", fall.Zero, "nope." + zone, dns.RcodeSuccess},
		{"with fallthrough a missing name goes to the next plugin", fall.F{Zones: []string{"."}}, "nope." + zone, dns.RcodeRefused},
		{"fallthrough for another zone keeps NXDOMAIN here", fall.F{Zones: []string{"other.test."}}, "nope." + zone, dns.RcodeSuccess},
		{"with fallthrough an existing name is answered here", fall.F{Zones: []string{"."}}, global, dns.RcodeSuccess},
		{"a name outside the zones goes to the next plugin", fall.Zero, "example.org.", dns.RcodeRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKfed(t, "", map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()})
			k.fall, k.Next = tt.fall, next
			_, rcode, _ := serve(t, k, test.Case{Qname: tt.qname, Qtype: dns.TypeA}.Msg(), false)
			if rcode != tt.wantRcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[rcode], dns.RcodeToString[tt.wantRcode])
			}
		})
	}
}

func TestServeDNSAnswersServfailUntilSynced(t *testing.T) {
	k := newTestKfed(t, "", map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()})
	k.synced.Store(false)
	resp, rcode, _ := serve(t, k, test.Case{Qname: zone, Qtype: dns.TypeSOA}.Msg(), false)
	if rcode != dns.RcodeServerFailure || resp != nil {
		t.Errorf("before sync: rcode %s, reply %v; want SERVFAIL left to the server to write", dns.RcodeToString[rcode], resp)
	}
}

// /ready says 200 only once the index is full and the ports take queries:
// a kubelet sends queries to a pod as soon as it is Ready.
func TestReadyOnceSyncedAndListening(t *testing.T) {
	for _, tt := range []struct {
		name              string
		synced, listening bool
		want              bool
	}{
		{name: "starting", want: false},
		{name: "synced, ports not bound yet", synced: true, want: false},
		{name: "listening, no full list yet", listening: true, want: false},
		{name: "synced and listening", synced: true, listening: true, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newKfed(config{zones: []string{zone}, federation: "dev", ttl: 30})
			k.synced.Store(tt.synced)
			k.listening.Store(tt.listening)
			if got := k.Ready(); got != tt.want {
				t.Errorf("Ready() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestServeDNSSeesIndexChangesAtOnce(t *testing.T) {
	k := newTestKfed(t, "", nil)
	q := test.Case{Qname: useastB, Qtype: dns.TypeA}.Msg()
	resp, _, _ := serve(t, k, q, false)
	if resp.Rcode != dns.RcodeNameError {
		t.Fatalf("empty index: %s", dns.RcodeToString[resp.Rcode])
	}
	if err := k.index.Set("default/demo", demoEndpoints(), nil); err != nil {
		t.Fatal(err)
	}
	if resp, _, _ := serve(t, k, q, false); len(resp.Answer) != 1 {
		t.Fatalf("after Set: %v", resp)
	}
	k.index.Delete("default/demo")
	if resp, _, _ := serve(t, k, q, false); resp.Rcode != dns.RcodeNameError {
		t.Fatalf("after Delete: %s", dns.RcodeToString[resp.Rcode])
	}
}

func TestMatchZoneFindsTheLongestZoneByWholeLabels(t *testing.T) {
	zones := []string{"kfed.test.", "us.kfed.test.", "example."}
	tests := []struct {
		name, qname, want string
	}{
		{"apex is in its zone", "kfed.test.", "kfed.test."},
		{"name below a zone is in it", "a.b.kfed.test.", "kfed.test."},
		{"the longest zone wins", "a.us.kfed.test.", "us.kfed.test."},
		{"a suffix that is not a whole label is not in the zone", "xkfed.test.", ""},
		{"an escaped dot is inside a label", `a\.kfed.test.`, ""},
		{"a name in no zone matches none", "example.org.", ""},
		{"the root zone holds every name", "example.org.", "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zs := zones
			if tt.want == "." {
				zs = []string{"."}
			}
			if got := matchZone(zs, tt.qname); got != tt.want {
				t.Errorf("matchZone(%q) = %q, want %q", tt.qname, got, tt.want)
			}
		})
	}
}

func TestServeDNSSynthesizesApexRecordsThatPackForAnyZone(t *testing.T) {
	for _, z := range []string{"kfed.test.", "svc.example.org.", "."} {
		for _, qtype := range []uint16{dns.TypeSOA, dns.TypeNS} {
			t.Run(z+" "+dns.TypeToString[qtype], func(t *testing.T) {
				k := newKfed(config{zones: []string{z}, federation: "dev", ttl: 30})
				k.synced.Store(true)
				resp, _, err := serve(t, k, test.Case{Qname: z, Qtype: qtype}.Msg(), false)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Answer) != 1 {
					t.Fatalf("answer %v", resp.Answer)
				}
				if _, err := resp.Pack(); err != nil {
					t.Errorf("reply does not pack: %v\n%v", err, resp)
				}
			})
		}
	}
}

// An SRV answer's additional section is kept between queries; it must
// follow changes to its targets, which may belong to other objects.
func TestServeDNSSRVAdditionalFollowsItsTargets(t *testing.T) {
	const (
		srv    = "_http._tcp.web.default.dev.svc.kfed.test."
		target = "cluster-2.web.default.dev.svc.kfed.test."
	)
	k := newTestKfed(t, "cluster-1", map[string][]extdnsv1alpha1.Endpoint{
		"default/web-srv": {sharedEndpoint(srv, "SRV", "0 1 80 "+target)},
	})
	q := test.Case{Qname: srv, Qtype: dns.TypeSRV}.Msg()
	extra := func() []string {
		t.Helper()
		resp, _, err := serve(t, k, q, false)
		if err != nil || len(resp.Answer) != 1 {
			t.Fatalf("SRV answer %v, %v", resp, err)
		}
		var got []string
		for _, rr := range resp.Extra {
			got = append(got, rr.(*dns.A).A.String())
		}
		return got
	}
	steps := []struct {
		name string
		eps  []extdnsv1alpha1.Endpoint // of the target's object; nil deletes it
		want []string
	}{
		{"target missing", nil, nil},
		{"target appears", []extdnsv1alpha1.Endpoint{shardEndpoint(target, "cluster-2", "us-east1-c", 1, "127.102.0.1", "")}, []string{"127.102.0.1"}},
		{"target moves", []extdnsv1alpha1.Endpoint{shardEndpoint(target, "cluster-2", "us-east1-c", 1, "127.102.0.9", "")}, []string{"127.102.0.9"}},
		{"target goes", nil, nil},
	}
	for _, s := range steps {
		if s.eps == nil {
			k.index.Delete("default/web")
		} else if err := k.index.Set("default/web", s.eps, nil); err != nil {
			t.Fatal(err)
		}
		for range 2 { // computed once, then reused
			if got := extra(); !slices.Equal(got, s.want) {
				t.Errorf("%s: additional %v, want %v", s.name, got, s.want)
			}
		}
	}
}

func TestServeDNSAnswersProtocolEdgesAsAuthoritativeServersDo(t *testing.T) {
	const (
		loopA = "a.loop.default.dev.svc.kfed.test."
		loopB = "b.loop.default.dev.svc.kfed.test."
		self  = "self.loop.default.dev.svc.kfed.test."
		into  = "into.loop.default.dev.svc.kfed.test."
	)
	k := newTestKfed(t, "cluster-1", map[string][]extdnsv1alpha1.Endpoint{
		"default/demo": demoEndpoints(),
		"default/loop": {
			sharedEndpoint(loopA, "CNAME", strings.TrimSuffix(loopB, ".")),
			sharedEndpoint(loopB, "CNAME", strings.TrimSuffix(loopA, ".")),
			sharedEndpoint(self, "CNAME", strings.TrimSuffix(self, ".")),
			sharedEndpoint(into, "CNAME", strings.TrimSuffix(loopA, ".")),
		},
		"default/apex": {sharedEndpoint(zone, "CNAME", "elsewhere.example.")},
	})
	tests := []struct {
		name string
		test.Case
	}{
		{"CNAME loop answers the chain once with SERVFAIL", test.Case{
			Qname: loopA, Qtype: dns.TypeA, Rcode: dns.RcodeServerFailure,
			Answer: []dns.RR{
				test.CNAME(loopA + "\t30\tIN\tCNAME\t" + loopB),
				test.CNAME(loopB + "\t30\tIN\tCNAME\t" + loopA),
			},
		}},
		{"CNAME to itself answers it once with SERVFAIL", test.Case{
			Qname: self, Qtype: dns.TypeA, Rcode: dns.RcodeServerFailure,
			Answer: []dns.RR{test.CNAME(self + "\t30\tIN\tCNAME\t" + self)},
		}},
		{"chain into a loop answers each record once with SERVFAIL", test.Case{
			Qname: into, Qtype: dns.TypeAAAA, Rcode: dns.RcodeServerFailure,
			Answer: []dns.RR{ // as SortAndCheck sorts them
				test.CNAME(loopA + "\t30\tIN\tCNAME\t" + loopB),
				test.CNAME(loopB + "\t30\tIN\tCNAME\t" + loopA),
				test.CNAME(into + "\t30\tIN\tCNAME\t" + loopA),
			},
		}},
		{"CNAME query of a looping name answers the CNAME alone", test.Case{
			Qname: loopA, Qtype: dns.TypeCNAME,
			Answer: []dns.RR{test.CNAME(loopA + "\t30\tIN\tCNAME\t" + loopB)},
		}},
		{"a CNAME at the apex is not served beside its SOA", test.Case{
			Qname: zone, Qtype: dns.TypeA, Ns: []dns.RR{soa},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.Authoritative = true
			resp, rcode, err := serve(t, k, tt.Msg(), false)
			if err != nil || rcode != dns.RcodeSuccess {
				t.Fatalf("ServeDNS = %d, %v", rcode, err)
			}
			if err := test.SortAndCheck(resp, tt.Case); err != nil {
				t.Errorf("%v\n%v", err, resp)
			}
		})
	}
}

func TestServeDNSAnswersOpcodesAndTransfersPerTheirRFCs(t *testing.T) {
	k := newTestKfed(t, "cluster-1", map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()})
	msg := func(opcode int, qname string, qtype uint16) *dns.Msg {
		m := test.Case{Qname: qname, Qtype: qtype}.Msg()
		m.Opcode = opcode
		return m
	}
	tests := []struct {
		name      string
		msg       *dns.Msg
		tcp       bool
		wantRcode int // ServeDNS's: the server writes the reply unless it is NOERROR
		want      *test.Case
	}{
		{"NOTIFY for the zone is acknowledged, not answered like a query", msg(dns.OpcodeNotify, zone, dns.TypeSOA), false, dns.RcodeSuccess,
			&test.Case{Rcode: dns.RcodeSuccess, Authoritative: true}},
		{"NOTIFY for a name that is not a zone is NOTAUTH", msg(dns.OpcodeNotify, global, dns.TypeSOA), false, dns.RcodeSuccess,
			&test.Case{Rcode: dns.RcodeNotAuth, Authoritative: true}},
		{"UPDATE is refused: the zone is read-only", msg(dns.OpcodeUpdate, zone, dns.TypeSOA), false, dns.RcodeRefused, nil},
		{"STATUS is not implemented", msg(dns.OpcodeStatus, zone, dns.TypeSOA), false, dns.RcodeNotImplemented, nil},
		{"IQUERY is not implemented (RFC 3425)", msg(dns.OpcodeIQuery, zone, dns.TypeA), false, dns.RcodeNotImplemented, nil},
		{"AXFR without a transfer block is refused at once", msg(dns.OpcodeQuery, zone, dns.TypeAXFR), true, dns.RcodeRefused, nil},
		{"IXFR without a transfer block is refused at once", msg(dns.OpcodeQuery, zone, dns.TypeIXFR), true, dns.RcodeRefused, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, rcode, err := serve(t, k, tt.msg, tt.tcp)
			if err != nil || rcode != tt.wantRcode {
				t.Fatalf("ServeDNS = %s, %v; want %s", dns.RcodeToString[rcode], err, dns.RcodeToString[tt.wantRcode])
			}
			if tt.want == nil {
				if resp != nil {
					t.Errorf("plugin wrote %v; want the server to write the error", resp)
				}
				return
			}
			if resp == nil {
				t.Fatal("no reply written")
			}
			if resp.Opcode != tt.msg.Opcode {
				t.Errorf("reply opcode %s, want %s", dns.OpcodeToString[resp.Opcode], dns.OpcodeToString[tt.msg.Opcode])
			}
			if err := test.Header(*tt.want, resp); err != nil {
				t.Error(err)
			}
			if len(resp.Answer)+len(resp.Ns) != 0 {
				t.Errorf("reply has records: %v", resp)
			}
		})
	}
}

func TestServeDNSAnswersTheConfiguredNameServers(t *testing.T) {
	k := newKfed(config{zones: []string{zone}, federation: "dev", ttl: 30, servers: []nameServer{
		{name: "ns1.kfed.test.", addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}},
		{name: "ns2.dns.kfed.test."},
		{name: "ns.provider.net."},
	}, timers: soaTimers{refresh: 3600, retry: 600, expire: 1209600}})
	k.synced.Store(true)
	soa := test.SOA(zone + "\t30\tIN\tSOA\tns1.kfed.test. hostmaster.kfed.test. 1 3600 600 1209600 30")
	tests := []struct {
		name string
		test.Case
	}{
		{"apex NS lists every configured name server", test.Case{
			Qname: zone, Qtype: dns.TypeNS,
			Answer: []dns.RR{
				test.NS(zone + "\t30\tIN\tNS\tns.provider.net."),
				test.NS(zone + "\t30\tIN\tNS\tns1.kfed.test."),
				test.NS(zone + "\t30\tIN\tNS\tns2.dns.kfed.test."),
			},
		}},
		{"SOA names the first name server as primary", test.Case{
			Qname: zone, Qtype: dns.TypeSOA, Answer: []dns.RR{soa},
		}},
		{"a name server in the zone answers its IPv4 addresses", test.Case{
			Qname: "ns1.kfed.test.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("ns1.kfed.test.\t30\tIN\tA\t192.0.2.1")},
		}},
		{"a name server in the zone answers its IPv6 addresses", test.Case{
			Qname: "ns1.kfed.test.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("ns1.kfed.test.\t30\tIN\tAAAA\t2001:db8::1")},
		}},
		{"a name server without addresses answers the address the query came to", test.Case{
			Qname: "ns2.dns.kfed.test.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("ns2.dns.kfed.test.\t30\tIN\tA\t127.0.0.1")},
		}},
		{"a name server's missing type is NODATA", test.Case{
			Qname: "ns1.kfed.test.", Qtype: dns.TypeTXT, Ns: []dns.RR{soa},
		}},
		{"the name above a deeper name server is an empty non-terminal", test.Case{
			Qname: "dns.kfed.test.", Qtype: dns.TypeA, Ns: []dns.RR{soa},
		}},
		{"the default name server is gone once others are configured", test.Case{
			Qname: "ns.dns.kfed.test.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.Authoritative = true
			resp, _, err := serve(t, k, tt.Msg(), false)
			if err != nil {
				t.Fatal(err)
			}
			if err := test.SortAndCheck(resp, tt.Case); err != nil {
				t.Errorf("%v\n%v", err, resp)
			}
			if len(resp.Ns) == 1 {
				got := resp.Ns[0].(*dns.SOA)
				if got.Refresh != 3600 || got.Retry != 600 || got.Expire != 1209600 || got.Minttl != 30 {
					t.Errorf("SOA timers %v, want the configured 3600 600 1209600 30", got)
				}
			}
		})
	}
}

// dnsEndpoint is object namespace/name at resourceVersion rv with eps.
func dnsEndpoint(key, rv string, eps ...extdnsv1alpha1.Endpoint) *extdnsv1alpha1.DNSEndpoint {
	ns, name, _ := strings.Cut(key, "/")
	return &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv},
		Spec:       extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps},
	}
}

func TestSerialIsTheSameInReplicasThatSawDifferentHistories(t *testing.T) {
	web := func(rv, addr string) *extdnsv1alpha1.DNSEndpoint {
		return dnsEndpoint("default/web", rv, shardEndpoint(global, "cluster-1", "us-east1-b", 1, addr, ""))
	}
	api := func(rv string) *extdnsv1alpha1.DNSEndpoint {
		return dnsEndpoint("default/api", rv, sharedEndpoint("api.default.dev.svc.kfed.test.", "A", "192.0.2.7"))
	}
	marker := func(rv string) *extdnsv1alpha1.DNSEndpoint { return dnsEndpoint("kfed-system/kfed-serial-dev", rv) }
	type event struct {
		deleted bool
		obj     any
	}
	tests := []struct {
		name       string
		first      []event // seen by a replica that ran throughout
		late       []event // the list a replica started afterwards gets
		wantSerial uint32
	}{
		{
			name:       "a replica started after updates agrees with one that saw them",
			first:      []event{{obj: web("100", "127.0.0.1")}, {obj: api("105")}, {obj: web("110", "127.0.0.2")}},
			late:       []event{{obj: api("105")}, {obj: web("110", "127.0.0.2")}},
			wantSerial: 110,
		},
		{
			name: "a deletion followed by the writer's marker agrees with a replica started after both",
			first: []event{{obj: web("100", "127.0.0.1")}, {obj: api("105")}, {obj: marker("90")},
				{deleted: true, obj: web("120", "127.0.0.1")}, {obj: marker("121")}},
			late:       []event{{obj: api("105")}, {obj: marker("121")}},
			wantSerial: 121,
		},
		{
			name: "a tombstone from a relist does not lower the serial",
			first: []event{{obj: web("100", "127.0.0.1")}, {obj: api("130")},
				{deleted: true, obj: cache.DeletedFinalStateUnknown{Key: "default/web", Obj: web("100", "127.0.0.1")}}},
			late:       []event{{obj: api("130")}},
			wantSerial: 130,
		},
		{
			name:       "the serial wraps modulo 2^32 as RFC 1982 serial arithmetic expects",
			first:      []event{{obj: web("4294967396", "127.0.0.1")}},
			late:       []event{{obj: web("4294967396", "127.0.0.1")}},
			wantSerial: 100,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			soa := func(events []event) uint32 {
				k := newTestKfed(t, "", nil)
				w := &watcher{federation: "dev", index: k.index, serial: &k.serial}
				var before uint32
				for _, e := range events {
					if obj := cached(k.index, e.obj); e.deleted {
						w.remove(obj)
					} else {
						w.apply(obj)
					}
					if now := k.serial.soa(); now < before {
						t.Errorf("serial fell from %d to %d", before, now)
					} else {
						before = now
					}
				}
				resp, _, _ := serve(t, k, test.Case{Qname: zone, Qtype: dns.TypeSOA}.Msg(), false)
				return resp.Answer[0].(*dns.SOA).Serial
			}
			first, late := soa(tt.first), soa(tt.late)
			if first != tt.wantSerial || late != tt.wantSerial {
				t.Errorf("serials %d (throughout) and %d (started late), want both %d", first, late, tt.wantSerial)
			}
		})
	}
}
