package kfed

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func drain(ch <-chan []dns.RR) []dns.RR {
	var rrs []dns.RR
	for batch := range ch {
		rrs = append(rrs, batch...)
	}
	return rrs
}

func TestTransferSendsTheZoneAsSecondariesExpect(t *testing.T) {
	k := newKfed(config{zones: []string{zone, "other.test."}, federation: "dev", cluster: "cluster-1", ttl: 30,
		servers: []nameServer{{name: "ns1.kfed.test.", addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}, {name: "ns.provider.net."}}})
	for key, eps := range map[string][]extdnsv1alpha1.Endpoint{
		"default/demo":  demoEndpoints(),
		"default/apex":  {sharedEndpoint(zone, "CNAME", "elsewhere.example.")},
		"default/other": {sharedEndpoint("www.other.test.", "A", "192.0.2.9")},
		"default/dup": {
			shardEndpoint("dup.default.dev.svc.kfed.test.", "cluster-1", "us-east1-b", 1, "127.101.0.7", ""),
			shardEndpoint("dup.default.dev.svc.kfed.test.", "cluster-2", "us-east1-c", 1, "127.101.0.7", ""),
		},
	} {
		if err := k.index.Set(key, eps, nil); err != nil {
			t.Fatal(err)
		}
	}
	w := &watcher{federation: "dev", index: k.index, serial: &k.serial}
	w.apply(cached(k.index, dnsEndpoint("default/marker", "4711")))
	k.synced.Store(true)

	ch, err := k.Transfer(zone, 0)
	if err != nil {
		t.Fatal(err)
	}
	rrs := drain(ch)
	var text []string
	for _, rr := range rrs {
		text = append(text, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	first, last := rrs[0], rrs[len(rrs)-1]
	if first.Header().Rrtype != dns.TypeSOA || last.Header().Rrtype != dns.TypeSOA || first.(*dns.SOA).Serial != 4711 {
		t.Fatalf("transfer does not start and end with the SOA at serial 4711:\n%s", strings.Join(text, "\n"))
	}
	tests := []struct {
		name    string
		record  string
		present bool
	}{
		{"apex NS lists every name server", "kfed.test. 30 IN NS ns.provider.net.", true},
		{"a name server in the zone has its address", "ns1.kfed.test. 30 IN A 192.0.2.1", true},
		{"the own cluster is sent by load-balancer address", global + " 30 IN A 127.101.0.1", true},
		{"cluster IPs stay inside the cluster", global + " 30 IN A 10.96.0.10", false},
		{"a weight-0 cluster is in the zone", global + " 30 IN A 127.103.0.1", true},
		{"AAAA records are sent", global + " 30 IN AAAA fd00::101", true},
		{"CNAME fallbacks are sent", europeC + " 30 IN CNAME " + europe, true},
		{"SRV records are sent", srvName + " 30 IN SRV 0 2 8080 cluster-2." + global, true},
		{"TXT records are sent", owner + ` 30 IN TXT "heritage=kfed,kfed/owner=dev"`, true},
		{"a CNAME at the apex is not sent", "kfed.test. 30 IN CNAME elsewhere.example.", false},
		{"another zone's names are not sent", "www.other.test. 30 IN A 192.0.2.9", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slices.Contains(text, tt.record); got != tt.present {
				t.Errorf("%q in the transfer: %v, want %v\n%s", tt.record, got, tt.present, strings.Join(text, "\n"))
			}
		})
	}
	t.Run("an address two clusters share is sent once", func(t *testing.T) {
		n := 0
		for _, s := range text {
			if s == "dup.default.dev.svc.kfed.test. 30 IN A 127.101.0.7" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("sent %d times", n)
		}
	})
	t.Run("the zone reads back as a valid zone", func(t *testing.T) {
		zp := dns.NewZoneParser(strings.NewReader(strings.Join(text, "\n")), zone, "")
		for _, ok := zp.Next(); ok; _, ok = zp.Next() {
		}
		if err := zp.Err(); err != nil {
			t.Error(err)
		}
	})
}

func TestTransferAnswersIXFRAndRefusesWhatItDoesNotServe(t *testing.T) {
	k := newTestKfed(t, "", map[string][]extdnsv1alpha1.Endpoint{"default/demo": demoEndpoints()})
	w := &watcher{federation: "dev", index: k.index, serial: &k.serial}
	w.apply(cached(k.index, dnsEndpoint("default/marker", "1000")))
	tests := []struct {
		name     string
		zone     string
		serial   uint32
		synced   bool
		wantErr  error // nil: any error will do when wantRRs is 0
		wantRRs  int   // 1: the SOA alone; -1: the whole zone
		wantFail bool
	}{
		{"IXFR from the current serial gets the SOA alone", zone, 1000, true, nil, 1, false},
		{"IXFR from a newer serial gets the SOA alone", zone, 1001, true, nil, 1, false},
		{"IXFR from an older serial falls back to the whole zone", zone, 999, true, nil, -1, false},
		{"IXFR across the 2^32 wrap from an older serial gets the whole zone", zone, 4294967000, true, nil, -1, false},
		{"a zone the plugin does not serve is left to other plugins", "example.org.", 0, true, transfer.ErrNotAuthoritative, 0, true},
		{"before the first full list there is nothing to send", zone, 0, false, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k.synced.Store(tt.synced)
			ch, err := k.Transfer(tt.zone, tt.serial)
			if tt.wantFail {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rrs := drain(ch)
			switch {
			case tt.wantRRs == 1 && (len(rrs) != 1 || rrs[0].Header().Rrtype != dns.TypeSOA):
				t.Errorf("got %d records, want the SOA alone", len(rrs))
			case tt.wantRRs == -1 && len(rrs) < 10:
				t.Errorf("got %d records, want the whole zone", len(rrs))
			}
		})
	}
}
