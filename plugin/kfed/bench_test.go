package kfed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/plugin/whoami"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/test/oldlayout"
)

// BenchmarkServeDNS measures the plugin's own work per query, from the
// question to the reply handed to the writer (which discards it: packing is
// CoreDNS's and miekg/dns's cost), in an index of about 10,000 names.
func BenchmarkServeDNS(b *testing.B) {
	objects := map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()}
	for i := range 1000 {
		objects[fmt.Sprintf("bench/svc-%d", i)] = syntheticService(fmt.Sprintf("svc-%d", i))
	}
	k := newTestKfed(b, "cluster-1", objects)
	if n := k.index.Len(); n < 10000 {
		b.Fatalf("index has %d names, want 10,000 or more", n)
	}
	for _, q := range []struct {
		name  string
		qname string
		qtype uint16
	}{
		{"global A, three clusters, local first", global, dns.TypeA},
		{"zone A, one cluster", useastB, dns.TypeA},
		{"zone A through two CNAMEs", asiaA, dns.TypeA},
		{"SRV with additional addresses", srvName, dns.TypeSRV},
		{"NXDOMAIN", "nope.default.dev.svc.kfed.test.", dns.TypeA},
		{"apex SOA", zone, dns.TypeSOA},
	} {
		b.Run(q.name, func(b *testing.B) {
			m := new(dns.Msg)
			m.SetQuestion(q.qname, q.qtype)
			w := &test.ResponseWriter{}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.ServeDNS(ctx, w, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkServeDNSWithRTTs is BenchmarkServeDNS's global A with round-trip
// times from cluster-1 known to the other clusters: the same path, with the
// keys of its place snapshot folding RTTs in, so it should cost the same.
func BenchmarkServeDNSWithRTTs(b *testing.B) {
	objects := map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()}
	for i := range 1000 {
		objects[fmt.Sprintf("bench/svc-%d", i)] = syntheticService(fmt.Sprintf("svc-%d", i))
	}
	k := newTestKfed(b, "cluster-1", objects)
	k.index.SetRTTs(map[string]time.Duration{"cluster-2": 30 * time.Millisecond, "cluster-3": 90 * time.Millisecond})
	m := new(dns.Msg)
	m.SetQuestion(global, dns.TypeA)
	w := &test.ResponseWriter{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.ServeDNS(ctx, w, m); err != nil {
			b.Fatal(err)
		}
	}
}

// syntheticService is what the services controller writes for a Service
// with shards in three clusters of two regions: ten names.
func syntheticService(svc string) []extdnsv1alpha1.Endpoint {
	base := svc + ".bench.dev.svc"
	g := base + ".kfed.test"
	c1 := func(name string) extdnsv1alpha1.Endpoint {
		return shardEndpoint(name, "cluster-1", "us-east1-b", 1, "127.101.0.1", "10.96.0.10")
	}
	c2 := func(name string) extdnsv1alpha1.Endpoint {
		return shardEndpoint(name, "cluster-2", "us-east1-c", 1, "127.102.0.1", "10.97.0.10")
	}
	c3 := func(name string) extdnsv1alpha1.Endpoint {
		return shardEndpoint(name, "cluster-3", "europe-west1-b", 1, "127.103.0.1", "10.98.0.10")
	}
	return []extdnsv1alpha1.Endpoint{
		c1(g), c2(g), c3(g),
		c1("cluster-1." + g), c2("cluster-2." + g), c3("cluster-3." + g),
		c1(base + ".us-east1.kfed.test"), c2(base + ".us-east1.kfed.test"), c3(base + ".europe-west1.kfed.test"),
		c1(base + ".us-east1-b.us-east1.kfed.test"), c2(base + ".us-east1-c.us-east1.kfed.test"),
		c3(base + ".europe-west1-b.europe-west1.kfed.test"),
		sharedEndpoint(base+".europe-west1-c.europe-west1.kfed.test", "CNAME", base+".europe-west1.kfed.test"),
		sharedEndpoint("_http._tcp."+g, "SRV", "0 1 80 cluster-1."+g, "0 1 80 cluster-2."+g, "0 1 80 cluster-3."+g),
	}
}

// packWriter packs every reply as miekg/dns's server does before sending it.
type packWriter struct {
	test.ResponseWriter
	n int
}

func (w *packWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	w.n += len(b)
	return err
}

var benchClient = &net.UDPAddr{IP: net.IPv4(10, 240, 0, 1), Port: 40212}

func (w *packWriter) RemoteAddr() net.Addr { return benchClient }

// BenchmarkQueryMix compares kfed with CoreDNS's whoami, the framework's
// floor, on what hack/bench-dns.sh sends: every name of 1,000 Services (A at
// address names and CNAMEs, SRV at SRV names) in a shuffled order, so that
// the index is read as from a real client, not from one hot name. Each query
// goes through the ScrubWriter CoreDNS's server wraps around every writer
// and is packed as miekg/dns packs it before sending: the per-query work of
// the server's CPU, without the sockets.
func BenchmarkQueryMix(b *testing.B) {
	objects := map[string][]extdnsv1alpha1.Endpoint{}
	var queries []*dns.Msg
	for i := range 1000 {
		svc := fmt.Sprintf("svc-%d", i)
		eps := syntheticService(svc)
		objects["bench/"+svc] = eps
		seen := map[string]bool{}
		for _, ep := range eps {
			if seen[ep.DNSName] {
				continue
			}
			seen[ep.DNSName] = true
			m := new(dns.Msg)
			qt := dns.TypeA
			if ep.RecordType == "SRV" {
				qt = dns.TypeSRV
			}
			m.SetQuestion(ep.DNSName+".", qt)
			queries = append(queries, m)
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
	k := newTestKfed(b, "cluster-1", objects)
	for _, p := range []struct {
		name string
		h    plugin.Handler
	}{{"kfed", k}, {"whoami", whoami.Whoami{}}} {
		b.Run(p.name, func(b *testing.B) {
			pw := &packWriter{}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m := queries[i%len(queries)]
				i++
				w := request.NewScrubWriter(m, pw)
				if _, err := p.h.ServeDNS(ctx, w, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(pw.n)/float64(b.N), "bytes/reply")
		})
	}
}

// BenchmarkServeDNSAtTheEdge measures an edge server's answer (no cluster)
// to the global name of a Service in three clusters, ordered by the
// client's location as geoip's metadata gives it (geoip's own lookup is not
// in it), in the index of BenchmarkServeDNS.
func BenchmarkServeDNSAtTheEdge(b *testing.B) {
	objects := map[string][]extdnsv1alpha1.Endpoint{"default/demo": edgeEndpoints()}
	for i := range 1000 {
		objects[fmt.Sprintf("bench/svc-%d", i)] = syntheticService(fmt.Sprintf("svc-%d", i))
	}
	k := newTestKfed(b, "", objects)
	for _, q := range []struct {
		name   string
		ctx    context.Context
		subnet string
	}{
		{"weighted, no location", context.Background(), ""},
		{"weighted, the subnet's own draw", context.Background(), "192.0.2.0/24"},
		{"by distance from the client's location", located("40.71", "-74.01"), ""},
		{"by distance, with ECS echoed", located("40.71", "-74.01"), "192.0.2.0/24"},
	} {
		b.Run(q.name, func(b *testing.B) {
			m := new(dns.Msg)
			m.SetQuestion(global, dns.TypeA)
			if q.subnet != "" {
				m = withSubnet(m, q.subnet)
			}
			w := &test.ResponseWriter{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.ServeDNS(q.ctx, w, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkServeDNSWithLoads is the plugin's work per query in cluster-1
// for 1,000 Services in today's layout, without loads and with the loads
// kfed-controller weighs them by (cluster-1 at 0.97, spilled, the others at
// 0.30): the same path but for the spill, so it should cost the same.
func BenchmarkServeDNSWithLoads(b *testing.B) {
	for _, loads := range []bool{false, true} {
		k := newKfed(config{zones: []string{zone}, federation: "dev", cluster: "cluster-1", ttl: 30})
		for i := range 1000 {
			ep := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: syntheticService(fmt.Sprintf("svc-%d", i))}}
			if err := oldlayout.Upgrade(ep); err != nil {
				b.Fatal(err)
			}
			table, err := dnsendpoint.ReadClusters(ep)
			if err != nil {
				b.Fatal(err)
			}
			if loads {
				for _, c := range table {
					u, w := 0.30, 70
					if c.Name == "cluster-1" {
						u, w = 0.97, 3
					}
					c.Load, c.Weight = &u, w
				}
			}
			if err := k.index.SetObject(fmt.Sprintf("bench/svc-%d", i), k.index.ParseRouted(ep.Spec.Endpoints, table, false)); err != nil {
				b.Fatal(err)
			}
		}
		k.synced.Store(true)
		for _, q := range []struct {
			name, qname string
			qtype       uint16
		}{
			{"global A", "svc-7.bench.dev.svc.kfed.test.", dns.TypeA},
			{"region A", "svc-7.bench.dev.svc.us-east1.kfed.test.", dns.TypeA},
			{"SRV", "_http._tcp.svc-7.bench.dev.svc.kfed.test.", dns.TypeSRV},
		} {
			b.Run(fmt.Sprintf("loads=%v/%s", loads, q.name), func(b *testing.B) {
				m := new(dns.Msg)
				m.SetQuestion(q.qname, q.qtype)
				w := &test.ResponseWriter{}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := k.ServeDNS(context.Background(), w, m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
