package kfed

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// FuzzServeDNSEndpoints feeds arbitrary DNSEndpoint objects (a JSON array,
// cluster tables included) through the codec into a synced plugin for zone
// kfed.test, as its watch does, then asks for every name they hold, and for
// qname, with several types and qtype. The plugin must not panic, must
// leave names outside its zone to the next plugin, and must answer inside
// it with records of its zone only (a CNAME out of the zone ends the
// chain), never NXDOMAIN for a name the index holds, and with a reply that
// packs.
func FuzzServeDNSEndpoints(f *testing.F) {
	f.Add([]byte(`[{"metadata":{"annotations":{"kfed.io/clusters":"[{\"name\":\"cluster-1\",\"weight\":1,\"addresses\":[\"127.1.0.1\"],\"clusterIPs\":[\"10.96.0.10\"]},{\"name\":\"cluster-2\",\"weight\":2,\"addresses\":[\"127.2.0.1\",\"fd00::2\"]}]"}},
		"spec":{"endpoints":[
		{"dnsName":"web.ns.dev.svc.kfed.test","recordType":"A","targets":["127.1.0.1","127.2.0.1"]},
		{"dnsName":"web.ns.dev.svc.kfed.test","recordType":"AAAA","targets":["fd00::2"]},
		{"dnsName":"cluster-1.web.ns.dev.svc.kfed.test","recordType":"A","targets":["127.1.0.1"]},
		{"dnsName":"_http._tcp.web.ns.dev.svc.kfed.test","recordType":"SRV","targets":["0 1 80 cluster-1.web.ns.dev.svc.kfed.test.","0 1 80 elsewhere.example.org."]},
		{"dnsName":"web.ns.dev.svc.eu.kfed.test","recordType":"CNAME","targets":["web.ns.dev.svc.kfed.test"]},
		{"dnsName":"out.kfed.test","recordType":"CNAME","targets":["elb.example.org"]},
		{"dnsName":"kfed.test","recordType":"CNAME","targets":["apex.example.org"]},
		{"dnsName":"web.example.org","recordType":"A","targets":["127.9.9.9"]},
		{"dnsName":"owner.kfed.test","recordType":"TXT","targets":["\"heritage=kfed\""]}]}}]`),
		"web.ns.dev.svc.kfed.test.", uint16(dns.TypeA))
	f.Add([]byte(`[{"spec":{"endpoints":[{"dnsName":"a.kfed.test","recordType":"CNAME","targets":["b.kfed.test"]},{"dnsName":"b.kfed.test","recordType":"CNAME","targets":["a.kfed.test"]},{"dnsName":"ns.dns.kfed.test","recordType":"A","targets":["127.0.0.1"]}]}}]`),
		"a.kfed.test.", uint16(dns.TypeAAAA))
	f.Add([]byte(`[{"spec":{"endpoints":[{"dnsName":"x.y.kfed.test","recordType":"SRV","targets":["1 2 3 x.y.kfed.test"]},{"dnsName":"*.kfed.test","recordType":"A","targets":["127.0.0.1"]}]}}]`),
		"y.kfed.test.", uint16(dns.TypeANY))
	f.Fuzz(func(t *testing.T, data []byte, qname string, qtype uint16) {
		var objects []extdnsv1alpha1.DNSEndpoint
		if err := json.Unmarshal(data, &objects); err != nil || len(objects) > 8 {
			return
		}
		k := newKfed(config{zones: []string{zone}, federation: "dev", cluster: "cluster-1", ttl: 30})
		k.synced.Store(true)
		queries := []string{qname, zone, "ns.dns." + zone, "nope." + zone}
		for i := range objects {
			obj := &objects[i]
			clusters, _ := dnsendpoint.ReadClusters(obj)
			_ = k.index.Set(fmt.Sprintf("ns/obj-%d", i), obj.Spec.Endpoints, clusters)
			for _, ep := range obj.Spec.Endpoints {
				queries = append(queries, ep.DNSName, dns.Fqdn(ep.DNSName))
			}
		}
		for _, name := range queries {
			if _, ok := dns.IsDomainName(name); !ok || len(name) > 255 {
				continue
			}
			for _, qt := range []uint16{qtype, dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSRV, dns.TypeTXT, dns.TypeANY} {
				checkQuery(t, k, dns.Fqdn(name), qt)
			}
		}
	})
}

func checkQuery(t *testing.T, k *Kfed, qname string, qtype uint16) {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(qname, qtype)
	rec := dnstest.NewRecorder(&test.ResponseWriter{TCP: true})
	rcode, _ := k.ServeDNS(context.Background(), request.NewScrubWriter(req, rec), req)
	lower := strings.ToLower(qname)
	inZone := dns.IsSubDomain(zone, lower)
	resp := rec.Msg
	if !inZone {
		if resp != nil {
			t.Fatalf("%s %s is outside %s, yet answered:\n%v", qname, dns.TypeToString[qtype], zone, resp)
		}
		return
	}
	if resp == nil {
		if !plugin.ClientWrite(rcode) {
			return // refused (a transfer, here) or not implemented: the server writes that
		}
		t.Fatalf("%s %s: no reply, rcode %s", qname, dns.TypeToString[qtype], dns.RcodeToString[rcode])
	}
	for _, section := range [][]dns.RR{resp.Answer, resp.Ns, resp.Extra} {
		for _, rr := range section {
			if rr.Header().Rrtype == dns.TypeOPT {
				continue
			}
			if !dns.IsSubDomain(zone, strings.ToLower(rr.Header().Name)) {
				t.Fatalf("%s %s: the reply holds %v, outside %s", qname, dns.TypeToString[qtype], rr, zone)
			}
		}
	}
	if _, exists := k.index.Lookup(lower); exists && resp.Rcode == dns.RcodeNameError && !chainEndsNowhere(k, resp.Answer) {
		t.Fatalf("%s %s: NXDOMAIN for a name the index holds", qname, dns.TypeToString[qtype])
	}
	if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError && resp.Rcode != dns.RcodeServerFailure {
		t.Fatalf("%s %s: rcode %s", qname, dns.TypeToString[qtype], dns.RcodeToString[resp.Rcode])
	}
	if _, err := resp.Pack(); err != nil {
		t.Fatalf("%s %s: reply does not pack: %v\n%v", qname, dns.TypeToString[qtype], err, resp)
	}
}

// chainEndsNowhere reports whether answer ends in a CNAME whose target does
// not exist: then NXDOMAIN is the reply's rcode, though the name asked for
// exists (RFC 6604: the rcode is that of the last name in the chain).
func chainEndsNowhere(k *Kfed, answer []dns.RR) bool {
	if len(answer) == 0 {
		return false
	}
	c, ok := answer[len(answer)-1].(*dns.CNAME)
	if !ok {
		return false
	}
	_, exists := k.index.Lookup(strings.ToLower(c.Target))
	return !exists
}
