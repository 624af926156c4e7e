package devenv

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/oschwald/geoip2-golang/v2"
)

// TestWriteGeoIPIsReadAsACityDatabase reads the database back with the
// reader CoreDNS's geoip plugin uses, as that plugin asks it.
func TestWriteGeoIPIsReadAsACityDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "geoip.mmdb")
	if err := WriteGeoIP(path, DevPlaces()); err != nil {
		t.Fatal(err)
	}
	db, err := geoip2.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		addr     string
		lat, lon float64
		located  bool
	}{
		{"192.0.2.77", 40.71, -74.01, true},
		{"198.51.100.1", 50.11, 8.68, true},
		{"203.0.113.254", 35.68, 139.69, true},
		{"127.0.0.1", 0, 0, false}, // geoip's own probe, and every query's source in the dev bed
		{"192.0.3.1", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			c, err := db.City(netip.MustParseAddr(tt.addr))
			if err != nil {
				t.Fatal(err)
			}
			l := c.Location
			if !tt.located {
				if l.Latitude != nil || l.Longitude != nil {
					t.Errorf("%s is placed at %v,%v; want nowhere", tt.addr, *l.Latitude, *l.Longitude)
				}
				return
			}
			if l.Latitude == nil || l.Longitude == nil || *l.Latitude != tt.lat || *l.Longitude != tt.lon {
				t.Errorf("%s at %v,%v; want %v,%v", tt.addr, l.Latitude, l.Longitude, tt.lat, tt.lon)
			}
		})
	}
}
