package dnsendpoint

import (
	"strings"
	"testing"
)

// FuzzParseSRVTarget feeds arbitrary SRV endpoint targets: ParseSRVTarget
// never panics, and a target it accepts prints back to text that parses to
// the same value (the writer and the plugin read SRV targets the same way).
func FuzzParseSRVTarget(f *testing.F) {
	for _, s := range []string{"0 50 80 web.example.com.", "1 2 3 Web.Example.COM", "0 0 0 .", "65536 1 1 a",
		"1 1 1 a b", "  1\t2\n3 x.", "-1 0 0 a", "0 0 0 ..", "+1 0 0 a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSRVTarget(s)
		if err != nil {
			if v != (SRVTarget{}) {
				t.Fatalf("error %v with a value %+v", err, v)
			}
			return
		}
		if v.Target == "" || strings.HasSuffix(v.Target, ".") || v.Target != strings.ToLower(v.Target) {
			t.Fatalf("%q read with target %q, want a lower-case name without the trailing dot", s, v.Target)
		}
		back, err := ParseSRVTarget(v.String())
		if err != nil || back != v {
			t.Fatalf("%q reads as %+v, printed %q, which reads as %+v, %v", s, v, v.String(), back, err)
		}
	})
}

// FuzzParseWeight feeds arbitrary kfed.io/weight values: ParseWeight never
// panics and always returns a usable weight, in [0, MaxWeight], the default
// when it reports an error.
func FuzzParseWeight(f *testing.F) {
	for _, s := range []string{"", "0", "1", "1048576", "1048577", "-1", "9223372036854775808", "+3", " 3", "0x10", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWeight(s)
		if w < 0 || w > MaxWeight {
			t.Fatalf("ParseWeight(%q) = %d, out of [0, %d]", s, w, MaxWeight)
		}
		if err != nil && w != DefaultWeight {
			t.Fatalf("ParseWeight(%q) = %d with error %v, want the default %d", s, w, err, DefaultWeight)
		}
		if err == nil && s != "" && w < MaxWeight {
			if again, err := ParseWeight(strings.TrimPrefix(s, "+")); err != nil || again != w {
				t.Fatalf("ParseWeight(%q) = %d, but without its sign %d, %v", s, w, again, err)
			}
		}
	})
}
