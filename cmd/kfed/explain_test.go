package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/devenv"
)

func TestExplainFlagsNameWhatIsWrong(t *testing.T) {
	db := filepath.Join(t.TempDir(), "geoip.mmdb")
	if err := devenv.WriteGeoIP(db, devenv.DevPlaces()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		f      explainFlags
		errHas string
		placed string // "lat,lon" where the subnet is placed; "" for nowhere
	}{
		{"a member's CoreDNS", explainFlags{from: "cluster-1", qtype: "a", output: "text"}, "", ""},
		{"an unknown output", explainFlags{qtype: "A", output: "wide"}, "--output must be text, json or yaml", ""},
		{"an unknown type", explainFlags{qtype: "MX", output: "text"}, "--type must be A, AAAA or SRV", ""},
		{"both vantages", explainFlags{from: "cluster-1", subnet: "192.0.2.0/24", qtype: "A", output: "text"}, "not both", ""},
		{"a subnet that is none", explainFlags{subnet: "tokyo", qtype: "A", output: "text", geoip: db}, "is not a subnet such as 203.0.113.0/24", ""},
		{"a subnet without a database", explainFlags{subnet: "192.0.2.0/24", qtype: "A", output: "text"}, "give --geoip FILE or set KFED_GEOIP", ""},
		{"a database that is not there", explainFlags{subnet: "192.0.2.0/24", qtype: "A", output: "text", geoip: db + ".gone"}, "--geoip " + db + ".gone", ""},
		{"a client in Tokyo", explainFlags{subnet: "203.0.113.9/24", qtype: "A", output: "json", geoip: db}, "", "35.68,139.69"},
		{"one address is its own subnet", explainFlags{subnet: "198.51.100.7", qtype: "A", output: "json", geoip: db}, "", "50.11,8.68"},
		{"a subnet the database places nowhere", explainFlags{subnet: "10.0.0.0/8", qtype: "A", output: "yaml", geoip: db}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := tt.f.query("demo.default.dev.svc.kfed.test")
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want one saying %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			placed := ""
			if q.Location != nil {
				placed = fmt.Sprintf("%g,%g", q.Location.Latitude, q.Location.Longitude)
			}
			if placed != tt.placed {
				t.Errorf("placed at %q, want %q", placed, tt.placed)
			}
		})
	}
}
