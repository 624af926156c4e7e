package dnsendpoint

import (
	"strings"
	"testing"
)

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
