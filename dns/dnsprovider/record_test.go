package dnsprovider

import (
	"slices"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   RecordSet
		want RecordSet
	}{
		{
			name: "upper-case name with trailing dot becomes lower case without it",
			in:   RecordSet{Name: "Web.Example.COM.", Type: "a", Targets: []string{"10.0.0.2", "10.0.0.1"}},
			want: RecordSet{Name: "web.example.com", Type: "A", TTL: DefaultTTL, Targets: []string{"10.0.0.1", "10.0.0.2"}},
		},
		{
			name: "duplicate targets collapse",
			in:   RecordSet{Name: "a.example.com", Type: "A", TTL: 60, Targets: []string{"10.0.0.1", "10.0.0.1"}},
			want: RecordSet{Name: "a.example.com", Type: "A", TTL: 60, Targets: []string{"10.0.0.1"}},
		},
		{
			name: "IPv6 addresses take canonical form",
			in:   RecordSet{Name: "a.example.com", Type: "AAAA", Targets: []string{"2001:DB8:0:0::1"}},
			want: RecordSet{Name: "a.example.com", Type: "AAAA", TTL: DefaultTTL, Targets: []string{"2001:db8::1"}},
		},
		{
			name: "CNAME and SRV targets lose case and trailing dot",
			in:   RecordSet{Name: "_http._tcp.example.com", Type: "SRV", Targets: []string{"0 1 80 C1.Example.com."}},
			want: RecordSet{Name: "_http._tcp.example.com", Type: "SRV", TTL: DefaultTTL, Targets: []string{"0 1 80 c1.example.com"}},
		},
		{
			name: "unquoted TXT is quoted, quotes inside escaped",
			in:   RecordSet{Name: "t.example.com", Type: "TXT", Targets: []string{`say "hi"`}},
			want: RecordSet{Name: "t.example.com", Type: "TXT", TTL: DefaultTTL, Targets: []string{`"say \"hi\""`}},
		},
		{
			name: "weight without set identifier is dropped",
			in:   RecordSet{Name: "a.example.com", Type: "A", Weight: 5, Targets: []string{"10.0.0.1"}},
			want: RecordSet{Name: "a.example.com", Type: "A", TTL: DefaultTTL, Targets: []string{"10.0.0.1"}},
		},
		{
			name: "alias record has no TTL and no targets",
			in:   RecordSet{Name: "a.example.com", Type: "A", TTL: 30, Targets: []string{"10.0.0.1"}, Alias: &Alias{Name: "LB.elb.amazonaws.com.", ZoneID: "Z1"}},
			want: RecordSet{Name: "a.example.com", Type: "A", Alias: &Alias{Name: "lb.elb.amazonaws.com", ZoneID: "Z1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("Normalize = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNormalizeRejectsInvalidTargets(t *testing.T) {
	for _, rs := range []RecordSet{
		{Name: "a.example.com", Type: "A", Targets: []string{"2001:db8::1"}},
		{Name: "a.example.com", Type: "AAAA", Targets: []string{"10.0.0.1"}},
		{Name: "a.example.com", Type: "A", Targets: []string{"not-an-ip"}},
		{Name: "a.example.com", Type: "SRV", Targets: []string{"0 1 target"}},
		{Name: "a.example.com", Type: "SRV", Targets: []string{"0 1 70000 target"}},
	} {
		if _, err := Normalize(rs); err == nil {
			t.Errorf("Normalize(%v) succeeded, want an error", rs)
		}
	}
}

func TestTXTQuotingRoundTrips(t *testing.T) {
	long := string(slices.Repeat([]byte("x"), 300))
	for _, v := range []string{"heritage=kfed,kfed/owner=a", `a "quoted" \ value`, long, ""} {
		if got := UnquoteTXT(QuoteTXT(v)); got != v {
			t.Errorf("UnquoteTXT(QuoteTXT(%q)) = %q", v, got)
		}
	}
	if q := QuoteTXT(long); q[256] != '"' {
		t.Errorf("a 300-byte value is not split at 255 bytes: %s", q)
	}
}

func TestZoneForPicksMostSpecificZone(t *testing.T) {
	zones := []string{"example.com", "svc.example.com.", "other.org"}
	for name, want := range map[string]string{
		"a.svc.example.com": "svc.example.com",
		"svc.example.com":   "svc.example.com",
		"b.example.com":     "example.com",
		"xexample.com":      "",
	} {
		got, ok := ZoneFor(name, zones)
		if got != want || ok != (want != "") {
			t.Errorf("ZoneFor(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}
