package clusterset

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/clusterset/zone"
)

// benchImports fills c's zone with n imports in namespace bench: nine in ten
// ClusterSetIP (svc-I, one IP, two named ports), one in ten headless
// (hl-I, two ports, five ready endpoints in each of three clusters, named
// pets in cluster-1, unnamed pods elsewhere).
func benchImports(c *Clusterset, n int) {
	ports := []zone.Port{{Name: "http", Protocol: "tcp", Port: 80}, {Name: "grpc", Protocol: "tcp", Port: 9090}}
	for i := range n {
		if i%10 != 9 {
			c.zone.SetImport(&zone.Import{Namespace: "bench", Name: fmt.Sprintf("svc-%d", i), Ports: ports,
				IPs: []netip.Addr{netip.AddrFrom4([4]byte{10, 42, byte(i >> 8), byte(i)})}})
			continue
		}
		name := fmt.Sprintf("hl-%d", i)
		c.zone.SetImport(&zone.Import{Namespace: "bench", Name: name, Headless: true, Ports: ports})
		for cl := range 3 {
			s := &zone.Slice{Namespace: "bench", Service: name, Cluster: fmt.Sprintf("cluster-%d", cl+1), Ports: ports}
			for e := range 5 {
				ep := zone.Endpoint{Addrs: []netip.Addr{netip.AddrFrom4([4]byte{10, byte(cl + 1), byte(i >> 4), byte(i<<4 | e)})}}
				if cl == 0 {
					ep.Hostname = fmt.Sprintf("%s-%d", name, e)
				}
				s.Endpoints = append(s.Endpoints, ep)
			}
			c.zone.SetSlice(fmt.Sprintf("bench/%s-%d", name, cl), s)
		}
	}
}

// BenchmarkServeDNS measures the plugin's own work per query, from the
// question to the reply handed to the writer (which discards it), in a zone
// of 1,000 imports.
func BenchmarkServeDNS(b *testing.B) {
	c := newClusterset(config{zone: defaultZone, ttl: defaultTTL})
	benchImports(c, 1000)
	c.synced.Store(true)
	for _, q := range []struct {
		name  string
		qname string
		qtype uint16
	}{
		{"ClusterSetIP A", "svc-500.bench.svc.clusterset.local.", dns.TypeA},
		{"ClusterSetIP SRV with additional", "_http._tcp.svc-500.bench.svc.clusterset.local.", dns.TypeSRV},
		{"headless A, 15 endpoints", "hl-509.bench.svc.clusterset.local.", dns.TypeA},
		{"headless endpoint name", "hl-509-2.cluster-1.hl-509.bench.svc.clusterset.local.", dns.TypeA},
		{"dns-version TXT", "dns-version.clusterset.local.", dns.TypeTXT},
		{"NXDOMAIN", "nope.bench.svc.clusterset.local.", dns.TypeA},
	} {
		b.Run(q.name, func(b *testing.B) {
			m := new(dns.Msg)
			m.SetQuestion(q.qname, q.qtype)
			w := &test.ResponseWriter{}
			ctx := context.Background()
			if _, err := c.ServeDNS(ctx, w, m); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ServeDNS(ctx, w, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemoryPerImport measures the live heap the zone keeps per import
// for 1,000 imports of benchImports' mix (900 ClusterSetIP, 100 headless of
// 15 endpoints). It reports bytes, not time; the informers' caches keep the
// same parsed zone.Import and zone.Slice values the zone does.
func BenchmarkMemoryPerImport(b *testing.B) {
	for b.Loop() {
		before := liveHeap()
		c := newClusterset(config{zone: defaultZone, ttl: defaultTTL})
		benchImports(c, 1000)
		after := liveHeap()
		b.ReportMetric(float64(after-before)/1000, "B/import")
		b.ReportMetric(float64(c.zone.Len()), "names")
		runtime.KeepAlive(c)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
