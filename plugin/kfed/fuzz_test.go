package kfed

import (
	"context"
	"slices"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// FuzzServeDNS sends arbitrary messages to the plugin as CoreDNS's server
// would: whatever parses as a DNS message reaches ServeDNS. The plugin must
// not panic, and must either write a well-formed reply to that query or
// write none and return an rcode that tells the server to write one.
func FuzzServeDNS(f *testing.F) {
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{global, dns.TypeA}, {asiaA, dns.TypeA}, {srvName, dns.TypeSRV}, {zone, dns.TypeSOA},
		{zone, dns.TypeNS}, {"nope." + zone, dns.TypeAAAA}, {big, dns.TypeA}, {owner, dns.TypeANY},
		{"ns.dns." + zone, dns.TypeA}, {"example.org.", dns.TypeA},
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		m.SetEdns0(1232, true)
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b[:len(b)-11], true) // without the OPT record
	}
	f.Add([]byte{}, false)

	k := newTestKfed(f, "cluster-1", map[string][]extdnsv1alpha1.Endpoint{
		"default/demo": demoEndpoints(), "default/big": bigEndpoints(),
	})
	f.Fuzz(func(t *testing.T, data []byte, tcp bool) {
		req := new(dns.Msg)
		if err := req.Unpack(data); err != nil {
			return // the server drops what does not parse
		}
		question := slices.Clone(req.Question)
		rec := dnstest.NewRecorder(&test.ResponseWriter{TCP: tcp})
		rcode, _ := k.ServeDNS(context.Background(), request.NewScrubWriter(req, rec), req)
		resp := rec.Msg
		if resp == nil {
			if plugin.ClientWrite(rcode) {
				t.Fatalf("rcode %s says a reply was written; none was", dns.RcodeToString[rcode])
			}
			return
		}
		if !resp.Response || resp.Id != req.Id || resp.Opcode != req.Opcode || !slices.Equal(resp.Question, question) {
			t.Fatalf("reply does not answer the query:\nquery %v\nreply %v", req, resp)
		}
		packed, err := resp.Pack()
		if err != nil {
			t.Fatalf("reply does not pack: %v\n%v", err, resp)
		}
		if limit := (&request.Request{W: &test.ResponseWriter{TCP: tcp}, Req: req}).Size(); len(packed) > limit && !tcp {
			t.Fatalf("UDP reply of %d octets over the client's %d", len(packed), limit)
		}
		if err := new(dns.Msg).Unpack(packed); err != nil {
			t.Fatalf("packed reply does not parse: %v", err)
		}
	})
}
