package dnsprovider

import (
	"strings"
	"testing"
)

func TestSRVs(t *testing.T) {
	tests := []struct {
		in     string
		want   SRV
		errHas string
	}{
		{in: "0 1 80 c1.web.example.com.", want: SRV{0, 1, 80, "c1.web.example.com"}},
		{in: "10 65535 8080 C1.Web.Example.com", want: SRV{10, 65535, 8080, "c1.web.example.com"}},
		{in: "0 1 80", errHas: `is not "priority weight port target"`},
		{in: "0 1 70000 c1.example.com.", errHas: `"70000" is not a 16-bit number`},
		{in: "0 -1 80 c1.example.com.", errHas: `"-1" is not a 16-bit number`},
		{in: "0 1 80 .", errHas: "names no host"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSRV(tt.in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want %q", err, tt.errHas)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			// Written back, a target is fully qualified, as ExternalDNS requires.
			if s := got.String(); !strings.HasSuffix(s, ".") {
				t.Errorf("%+v written as %q, without the trailing dot", got, s)
			}
		})
	}
}
