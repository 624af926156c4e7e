package dnsprovider

import (
	"strings"
	"testing"
)

// FuzzParseSRV feeds arbitrary SRV targets: ParseSRV never panics, and a
// target it accepts prints back to text that parses to the same value (the
// writer, the plugin and the providers read SRV targets the same way).
func FuzzParseSRV(f *testing.F) {
	for _, s := range []string{"0 50 80 web.example.com.", "1 2 3 Web.Example.COM", "0 0 0 .", "65536 1 1 a",
		"1 1 1 a b", "  1\t2\n3 x.", "-1 0 0 a", "0 0 0 ..", "+1 0 0 a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSRV(s)
		if err != nil {
			if v != (SRV{}) {
				t.Fatalf("error %v with a value %+v", err, v)
			}
			return
		}
		if v.Target == "" || strings.HasSuffix(v.Target, ".") || v.Target != strings.ToLower(v.Target) {
			t.Fatalf("%q read with target %q, want a lower-case name without the trailing dot", s, v.Target)
		}
		back, err := ParseSRV(v.String())
		if err != nil || back != v {
			t.Fatalf("%q reads as %+v, printed %q, which reads as %+v, %v", s, v, v.String(), back, err)
		}
	})
}
