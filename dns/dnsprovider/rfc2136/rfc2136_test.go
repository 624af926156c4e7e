package rfc2136_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/conformance"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/test/bindtest"
)

const zone = "kfed.test"

func newProvider(t testing.TB, srv *bindtest.Server, maxMsg int) (*rfc2136.Provider, dnsprovider.Zone) {
	t.Helper()
	p, err := rfc2136.New(rfc2136.Config{
		Server: srv.Addr, Zones: []string{srv.Zone},
		TSIGKeyName: bindtest.KeyName, TSIGSecretFile: srv.SecretFile,
		MaxMessageSize: maxMsg,
	})
	if err != nil {
		t.Fatal(err)
	}
	zones, err := p.Zones(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p, zones[0]
}

// resolver asks BIND itself, as a client would.
func resolver(srv *bindtest.Server) func(t testing.TB, name, typ string) []string {
	return func(t testing.TB, name, typ string) []string {
		var out []string
		for _, rr := range srv.Query(t, name, dns.StringToType[typ]) {
			if dns.TypeToString[rr.Header().Rrtype] == typ {
				rs := dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: name, Type: typ, Targets: []string{strings.TrimPrefix(rr.String(), rr.Header().String())}})
				out = append(out, rs.Targets...)
			}
		}
		slices.Sort(out)
		return out
	}
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) conformance.Target {
		srv := bindtest.Start(t, zone)
		// A small message size, so that a plan of a few hundred changes
		// needs more than one message.
		const maxMsg = 16000
		p, z := newProvider(t, srv, maxMsg)
		return conformance.Target{
			Provider: p, Zone: z,
			// A create of an A record and its mark is ~250 bytes.
			ChangesPerRequest: maxMsg / 100,
			Resolve:           resolver(srv),
		}
	})
}

func TestUnsignedUpdateIsRefused(t *testing.T) {
	srv := bindtest.Start(t, zone)
	p, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{zone}})
	if err != nil {
		t.Fatal(err)
	}
	zones, _ := p.Zones(context.Background())
	cs := zones[0].NewChangeset()
	cs.Add(dnsprovider.Change{Action: dnsprovider.Create, Group: "x." + zone,
		New: dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "x." + zone, Type: "A", Targets: []string{"10.0.0.1"}})})
	err = cs.Apply(context.Background())
	if err == nil || !strings.Contains(err.Error(), "REFUSED") || errors.Is(err, dnsprovider.ErrPrecondition) {
		t.Fatalf("unsigned update: err = %v, want REFUSED", err)
	}
	if _, err := zones[0].Records(context.Background()); err == nil {
		t.Error("unsigned AXFR succeeded; the server should refuse it")
	}
}

func TestWrongSecretIsAnError(t *testing.T) {
	srv := bindtest.Start(t, zone)
	bad := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(bad, []byte("c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"), 0o600)
	p, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: bad})
	if err != nil {
		t.Fatal(err)
	}
	zones, _ := p.Zones(context.Background())
	if _, err := zones[0].Records(context.Background()); err == nil {
		t.Error("AXFR with a wrong TSIG secret succeeded")
	}
}

func TestMissingSecretFileIsAnError(t *testing.T) {
	_, err := rfc2136.New(rfc2136.Config{Server: "127.0.0.1:53", Zones: []string{zone}, TSIGKeyName: "k", TSIGSecretFile: "/nonexistent/secret"})
	if err == nil || !strings.Contains(err.Error(), "TSIG secret") {
		t.Errorf("err = %v, want one about the TSIG secret", err)
	}
}

func TestUpdatesSplitIntoMessagesThatFit(t *testing.T) {
	srv := bindtest.Start(t, zone)
	for _, c := range []struct {
		maxMsg, wantMessages int
	}{
		{rfc2136.DefaultMaxMessageSize, 1},
		{8000, 0}, // more than one: counted below
	} {
		p, z := newProvider(t, srv, c.maxMsg)
		reg, _ := dnsprovider.NewRegistry("split", "")
		var desired []dnsprovider.RecordSet
		for i := range 100 {
			desired = append(desired, dnsprovider.RecordSet{Name: "n" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".split" + string(rune('0'+c.maxMsg%7)) + "." + zone, Type: "A", Targets: []string{"10.0.0.1"}})
		}
		before := p.Stats()
		if _, err := dnsprovider.Sync(context.Background(), p, z, dnsprovider.Planner{Registry: reg}, desired); err != nil {
			t.Fatal(err)
		}
		msgs := p.Stats().Requests - before.Requests - 1 // minus the AXFR
		if c.wantMessages > 0 && msgs != int64(c.wantMessages) {
			t.Errorf("max %d bytes: 200 changes sent in %d messages, want %d", c.maxMsg, msgs, c.wantMessages)
		}
		if c.wantMessages == 0 && msgs < 2 {
			t.Errorf("max %d bytes: 200 changes sent in %d messages, want several", c.maxMsg, msgs)
		}
		t.Logf("max %d bytes per message: 200 changes in %d messages", c.maxMsg, msgs)
	}
}

// A record set zone-file syntax cannot carry as asked is refused by name,
// and the rest of the sync still reaches the zone: one bad DNSEndpoint must
// not hold back every other record.
func TestUnwritableRecordSetHoldsBackNothingElse(t *testing.T) {
	srv := bindtest.Start(t, zone)
	p, z := newProvider(t, srv, 0)
	reg, _ := dnsprovider.NewRegistry("unwritable", "")
	desired := []dnsprovider.RecordSet{
		{Name: "good.kfed.test", Type: "A", Targets: []string{"192.0.2.1"}},
		{Name: "comment.kfed.test", Type: "TXT", Targets: []string{`"a" ; comment "`}},
		{Name: "also-good.kfed.test", Type: "A", Targets: []string{"192.0.2.2"}},
	}
	_, err := dnsprovider.Sync(context.Background(), p, z, dnsprovider.Planner{Registry: reg}, desired)
	if err == nil || !strings.Contains(err.Error(), "comment.kfed.test") {
		t.Fatalf("sync error = %v, want one naming comment.kfed.test", err)
	}
	ask := resolver(srv)
	for name, want := range map[string][]string{
		"good.kfed.test":      {"192.0.2.1"},
		"also-good.kfed.test": {"192.0.2.2"},
	} {
		if got := ask(t, name, "A"); !slices.Equal(got, want) {
			t.Errorf("%s A = %v, want %v", name, got, want)
		}
	}
	if got := ask(t, "comment.kfed.test", "TXT"); len(got) != 0 {
		t.Errorf("comment.kfed.test TXT = %v, want nothing written in its stead", got)
	}
}
