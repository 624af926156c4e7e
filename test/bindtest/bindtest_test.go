package bindtest_test

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/test/bindtest"
)

func TestKilledServerRestartsWithTheUpdatesItAcknowledged(t *testing.T) {
	srv := bindtest.Start(t, "kfed.test")
	m := new(dns.Msg)
	m.SetUpdate("kfed.test.")
	rr, _ := dns.NewRR("web.kfed.test. 30 IN A 192.0.2.1")
	m.Insert([]dns.RR{rr})
	m.SetTsig(bindtest.KeyName, dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{TsigSecret: map[string]string{bindtest.KeyName: srv.Secret}}
	if r, _, err := c.Exchange(m, srv.Addr); err != nil || r.Rcode != dns.RcodeSuccess {
		t.Fatalf("update: %v %v", r, err)
	}
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Answers(t, "web.kfed.test", dns.TypeA); len(got) != 1 || got[0] != "192.0.2.1" {
		t.Errorf("after a kill and restart web.kfed.test answers %v, want 192.0.2.1", got)
	}
	rrs, err := srv.Transfer()
	if err != nil {
		t.Fatal(err)
	}
	if len(rrs) != 4 { // SOA, NS, ns A, web A
		t.Errorf("AXFR has %d records, want 4: %v", len(rrs), rrs)
	}
}
