package rfc2136

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// FuzzRecordText feeds arbitrary record sets through the text this provider
// writes them in (zone-file syntax read by dns.NewRR) and back the way it
// reads a zone (wire format from AXFR, printed by rdata). Nothing may panic,
// and a record set it agrees to write must read back equal: otherwise the
// provider writes a record other than the one meant (a target smuggling a
// second field or a comment in), or every plan shows a change that is never
// done.
func FuzzRecordText(f *testing.F) {
	for _, s := range []struct {
		name   string
		typ    uint8
		ttl    int64
		target string
	}{
		{"web.kfed.test", 0, 30, "192.0.2.1"},
		{"web.kfed.test.", 1, 30, "fd00::1"},
		{"WWW.kfed.test", 2, 300, "Elb.Example.org"},
		{"_http._tcp.kfed.test", 3, 30, "0 1 80 web.kfed.test"},
		{"owner.kfed.test", 4, 30, `"heritage=kfed,kfed/owner=dev"`},
		{"owner.kfed.test", 4, 30, `plain text with "quotes" and \ backslash`},
		{"t.kfed.test", 4, 30, `"a" "b"`},
		{"t.kfed.test", 4, 30, `"a" ; comment "`},
		{"a;b.kfed.test", 0, 30, "192.0.2.1"},
		{"c.kfed.test", 2, 4294967296, "x.example.org"},
		{"s.kfed.test", 3, 1, "1 2 3 a\\.b.example.org"},
	} {
		f.Add(s.name, s.typ, s.ttl, s.target)
	}
	types := []string{dnsprovider.TypeA, dnsprovider.TypeAAAA, dnsprovider.TypeCNAME, dnsprovider.TypeSRV, dnsprovider.TypeTXT}
	f.Fuzz(func(t *testing.T, name string, typ uint8, ttl int64, target string) {
		rs, err := dnsprovider.Normalize(dnsprovider.RecordSet{Name: name, Type: types[int(typ)%len(types)], TTL: ttl, Targets: []string{target}})
		if err != nil {
			return
		}
		written, err := rrs(rs)
		if err != nil {
			return // refused before anything is sent
		}
		if len(written) != 1 {
			t.Fatalf("one target written as %d records: %v", len(written), written)
		}
		// Through the wire, as a zone transfer brings it back.
		m := new(dns.Msg)
		m.Answer = written
		b, err := m.Pack()
		if err != nil {
			t.Fatalf("record %v does not pack: %v", written[0], err)
		}
		back := new(dns.Msg)
		if err := back.Unpack(b); err != nil {
			t.Fatalf("record %v does not unpack: %v", written[0], err)
		}
		rr := back.Answer[0]
		h := rr.Header()
		read, err := dnsprovider.Normalize(dnsprovider.RecordSet{
			Name: dnsprovider.NormalizeName(h.Name), Type: dns.TypeToString[h.Rrtype], TTL: int64(h.Ttl), Targets: []string{rdata(rr)},
		})
		if err != nil {
			t.Fatalf("record %v written for %v does not read back: %v", rr, rs, err)
		}
		if !read.Equal(rs) {
			t.Fatalf("record set %v is written as %v and reads back as %v", rs, rr, read)
		}
	})
}
