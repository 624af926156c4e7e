package clusterset

import (
	"context"
	"net/netip"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kfed-io/kfed/plugin/clusterset/zone"
)

// newTestClusterset is the plugin for clusterset.local, synced, with web
// (ClusterSetIP 10.42.0.7 and fd00::7, ports http/80 and an unnamed 9090) and
// db (headless: db-0 and db-1 in cluster-1, an unnamed pod in cluster-2,
// port sql/5432) imported in namespace shop.
func newTestClusterset(tb testing.TB) *Clusterset {
	tb.Helper()
	c := newClusterset(config{zone: defaultZone, ttl: defaultTTL})
	a := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	c.zone.SetImport(&zone.Import{Namespace: "shop", Name: "web", IPs: a("10.42.0.7", "fd00::7"),
		Ports: []zone.Port{{Name: "http", Protocol: "tcp", Port: 80}, {Protocol: "tcp", Port: 9090}}})
	sql := []zone.Port{{Name: "sql", Protocol: "tcp", Port: 5432}}
	c.zone.SetImport(&zone.Import{Namespace: "shop", Name: "db", Headless: true, Ports: sql})
	c.zone.SetSlice("shop/db-c1", &zone.Slice{Namespace: "shop", Service: "db", Cluster: "cluster-1", Ports: sql,
		Endpoints: []zone.Endpoint{{Hostname: "db-0", Addrs: a("10.1.0.10")}, {Hostname: "db-1", Addrs: a("10.1.0.11")}}})
	c.zone.SetSlice("shop/db-c2", &zone.Slice{Namespace: "shop", Service: "db", Cluster: "cluster-2", Ports: sql,
		Endpoints: []zone.Endpoint{{Addrs: a("10.2.0.20")}}})
	c.serial.Store(42)
	c.synced.Store(true)
	return c
}

const soa = "clusterset.local.	5	IN	SOA	ns.dns.clusterset.local. hostmaster.clusterset.local. 42 7200 1800 86400 5"

func TestServeDNSAnswersPerTheMCSSpecification(t *testing.T) {
	c := newTestClusterset(t)
	tests := []struct {
		name string
		test.Case
	}{
		{"ClusterSetIP service answers its IPv4 clusterset IP", test.Case{
			Qname: "web.shop.svc.clusterset.local.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("web.shop.svc.clusterset.local. 5 IN A 10.42.0.7")},
		}},
		{"and its IPv6 one; query case does not matter", test.Case{
			Qname: "WEB.Shop.svc.clusterset.local.", Qtype: dns.TypeAAAA,
			Answer: []dns.RR{test.AAAA("web.shop.svc.clusterset.local. 5 IN AAAA fd00::7")},
		}},
		{"SRV of a named port targets the service name, with its addresses in additional", test.Case{
			Qname: "_http._tcp.web.shop.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("_http._tcp.web.shop.svc.clusterset.local. 5 IN SRV 0 1 80 web.shop.svc.clusterset.local.")},
			Extra: []dns.RR{
				test.A("web.shop.svc.clusterset.local. 5 IN A 10.42.0.7"),
				test.AAAA("web.shop.svc.clusterset.local. 5 IN AAAA fd00::7"),
			},
		}},
		{"SRV at the service name answers every port, named or not", test.Case{
			Qname: "web.shop.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV("web.shop.svc.clusterset.local. 5 IN SRV 0 1 80 web.shop.svc.clusterset.local."),
				test.SRV("web.shop.svc.clusterset.local. 5 IN SRV 0 1 9090 web.shop.svc.clusterset.local."),
			},
			Extra: []dns.RR{
				test.A("web.shop.svc.clusterset.local. 5 IN A 10.42.0.7"),
				test.AAAA("web.shop.svc.clusterset.local. 5 IN AAAA fd00::7"),
			},
		}},
		{"ClusterSetIP service has no per-cluster name", test.Case{
			Qname: "cluster-1.web.shop.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"SRV of a protocol the port does not have is NXDOMAIN", test.Case{
			Qname: "_http._udp.web.shop.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"headless service answers every ready endpoint of every cluster", test.Case{
			Qname: "db.shop.svc.clusterset.local.", Qtype: dns.TypeA,
			Answer: []dns.RR{
				test.A("db.shop.svc.clusterset.local. 5 IN A 10.1.0.10"),
				test.A("db.shop.svc.clusterset.local. 5 IN A 10.1.0.11"),
				test.A("db.shop.svc.clusterset.local. 5 IN A 10.2.0.20"),
			},
		}},
		{"headless endpoint name answers that endpoint", test.Case{
			Qname: "db-1.cluster-1.db.shop.svc.clusterset.local.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("db-1.cluster-1.db.shop.svc.clusterset.local. 5 IN A 10.1.0.11")},
		}},
		{"an endpoint without hostname is named by its address", test.Case{
			Qname: "10-2-0-20.cluster-2.db.shop.svc.clusterset.local.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("10-2-0-20.cluster-2.db.shop.svc.clusterset.local. 5 IN A 10.2.0.20")},
		}},
		{"a hostname in the wrong cluster is NXDOMAIN", test.Case{
			Qname: "db-1.cluster-2.db.shop.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"headless SRV has one record per endpoint, targeting its name", test.Case{
			Qname: "_sql._tcp.db.shop.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV("_sql._tcp.db.shop.svc.clusterset.local. 5 IN SRV 0 1 5432 10-2-0-20.cluster-2.db.shop.svc.clusterset.local."),
				test.SRV("_sql._tcp.db.shop.svc.clusterset.local. 5 IN SRV 0 1 5432 db-0.cluster-1.db.shop.svc.clusterset.local."),
				test.SRV("_sql._tcp.db.shop.svc.clusterset.local. 5 IN SRV 0 1 5432 db-1.cluster-1.db.shop.svc.clusterset.local."),
			},
			Extra: []dns.RR{
				test.A("10-2-0-20.cluster-2.db.shop.svc.clusterset.local. 5 IN A 10.2.0.20"),
				test.A("db-0.cluster-1.db.shop.svc.clusterset.local. 5 IN A 10.1.0.10"),
				test.A("db-1.cluster-1.db.shop.svc.clusterset.local. 5 IN A 10.1.0.11"),
			},
		}},
		{"a cluster's level under a headless service is an empty non-terminal: NODATA", test.Case{
			Qname: "cluster-1.db.shop.svc.clusterset.local.", Qtype: dns.TypeA,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"a type the name lacks is NODATA", test.Case{
			Qname: "db.shop.svc.clusterset.local.", Qtype: dns.TypeAAAA,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"the namespace is an empty non-terminal", test.Case{
			Qname: "shop.svc.clusterset.local.", Qtype: dns.TypeA,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"a service that is not exported is NXDOMAIN", test.Case{
			Qname: "cart.shop.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"a namespace that exports nothing is NXDOMAIN", test.Case{
			Qname: "web.other.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"dns-version answers the specification's schema version", test.Case{
			Qname: "dns-version.clusterset.local.", Qtype: dns.TypeTXT,
			Answer: []dns.RR{test.TXT(`dns-version.clusterset.local. 28800 IN TXT "1.0.0"`)},
		}},
		{"dns-version has no address: NODATA", test.Case{
			Qname: "dns-version.clusterset.local.", Qtype: dns.TypeA,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"apex SOA", test.Case{
			Qname: "clusterset.local.", Qtype: dns.TypeSOA,
			Answer: []dns.RR{test.SOA(soa)},
		}},
		{"apex NS", test.Case{
			Qname: "clusterset.local.", Qtype: dns.TypeNS,
			Answer: []dns.RR{test.NS("clusterset.local. 5 IN NS ns.dns.clusterset.local.")},
		}},
		{"apex A is NODATA", test.Case{
			Qname: "clusterset.local.", Qtype: dns.TypeA,
			Ns: []dns.RR{test.SOA(soa)},
		}},
		{"the name server answers the address the query came in on", test.Case{
			Qname: "ns.dns.clusterset.local.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("ns.dns.clusterset.local. 5 IN A 127.0.0.1")},
		}},
		{"ANY answers every record of a name", test.Case{
			Qname: "web.shop.svc.clusterset.local.", Qtype: dns.TypeANY,
			Answer: []dns.RR{
				test.A("web.shop.svc.clusterset.local. 5 IN A 10.42.0.7"),
				test.AAAA("web.shop.svc.clusterset.local. 5 IN AAAA fd00::7"),
				test.SRV("web.shop.svc.clusterset.local. 5 IN SRV 0 1 80 web.shop.svc.clusterset.local."),
				test.SRV("web.shop.svc.clusterset.local. 5 IN SRV 0 1 9090 web.shop.svc.clusterset.local."),
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := c.ServeDNS(context.Background(), rec, tt.Msg()); err != nil {
				t.Fatal(err)
			}
			if !rec.Msg.Authoritative {
				t.Error("reply not authoritative")
			}
			if err := test.SortAndCheck(rec.Msg, tt.Case); err != nil {
				t.Error(err)
			}
		})
	}
}

// next answers every query it gets with REFUSED, to show a query went past.
type next struct{ called bool }

func (n *next) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	n.called = true
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeRefused)
	return dns.RcodeRefused, w.WriteMsg(m)
}
func (*next) Name() string { return "next" }

func TestServeDNSOutsideTheAnswers(t *testing.T) {
	tests := []struct {
		name      string
		qname     string
		synced    bool
		fall      fall.F
		opcode    int
		qtype     uint16
		wantRcode int
		wantNext  bool
	}{
		{name: "a name outside the zone goes to the next plugin", qname: "web.shop.svc.cluster.local.", synced: true, wantNext: true},
		{name: "before the first full lists, SERVFAIL rather than a denial", qname: "web.shop.svc.clusterset.local.", wantRcode: dns.RcodeServerFailure},
		{name: "fallthrough passes NXDOMAIN on", qname: "cart.shop.svc.clusterset.local.", synced: true, fall: fall.Root, wantNext: true},
		{name: "fallthrough keeps names that exist", qname: "web.shop.svc.clusterset.local.", synced: true, fall: fall.Root, wantRcode: dns.RcodeSuccess},
		{name: "zone transfers are refused", qname: "clusterset.local.", synced: true, qtype: dns.TypeAXFR, wantRcode: dns.RcodeRefused},
		{name: "updates are refused", qname: "clusterset.local.", synced: true, opcode: dns.OpcodeUpdate, wantRcode: dns.RcodeRefused},
		{name: "other opcodes are not implemented", qname: "clusterset.local.", synced: true, opcode: dns.OpcodeStatus, wantRcode: dns.RcodeNotImplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClusterset(t)
			c.synced.Store(tt.synced)
			c.fall = tt.fall
			n := &next{}
			c.Next = n
			m := new(dns.Msg)
			m.SetQuestion(tt.qname, max(tt.qtype, dns.TypeA))
			m.Opcode = tt.opcode
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			rcode, _ := c.ServeDNS(context.Background(), rec, m)
			if n.called != tt.wantNext {
				t.Fatalf("next plugin called %v, want %v", n.called, tt.wantNext)
			}
			if !tt.wantNext && rcode != tt.wantRcode && (rec.Msg == nil || rec.Msg.Rcode != tt.wantRcode) {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[rcode], dns.RcodeToString[tt.wantRcode])
			}
		})
	}
}

// /ready says 200 only once the zone is full and the ports take queries:
// a kubelet sends queries to a pod as soon as it is Ready.
func TestReadyOnceSyncedAndListening(t *testing.T) {
	for _, tt := range []struct {
		name              string
		synced, listening bool
		want              bool
	}{
		{name: "starting", want: false},
		{name: "synced, ports not bound yet", synced: true, want: false},
		{name: "listening, no full lists yet", listening: true, want: false},
		{name: "synced and listening", synced: true, listening: true, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClusterset(t)
			c.synced.Store(tt.synced)
			c.listening.Store(tt.listening)
			if got := c.Ready(); got != tt.want {
				t.Errorf("Ready() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestServeDNSCountsRequestsByRcode(t *testing.T) {
	c := newTestClusterset(t)
	before := map[string]float64{}
	for _, rc := range []string{"NOERROR", "NXDOMAIN", "SERVFAIL"} {
		before[rc] = testutil.ToFloat64(requestCount.WithLabelValues(rc))
	}
	ask := func(name string) {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		if _, err := c.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
			t.Fatal(err)
		}
	}
	ask("web.shop.svc.clusterset.local.")
	ask("cart.shop.svc.clusterset.local.")
	ask("cart.shop.svc.clusterset.local.")
	c.synced.Store(false)
	ask("web.shop.svc.clusterset.local.")
	for rc, want := range map[string]float64{"NOERROR": 1, "NXDOMAIN": 2, "SERVFAIL": 1} {
		if got := testutil.ToFloat64(requestCount.WithLabelValues(rc)) - before[rc]; got != want {
			t.Errorf("requests_total{rcode=%q} rose by %v, want %v", rc, got, want)
		}
	}
}
