package regions

import (
	"testing"

	"github.com/kfed-io/kfed/internal/geo"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		region string
		near   geo.Point // a city the region is in or beside
		km     float64
	}{
		{"us-east1", geo.Point{Latitude: 32.78, Longitude: -79.93}, 50},      // Charleston
		{"europe-west1", geo.Point{Latitude: 50.85, Longitude: 4.35}, 80},    // Brussels
		{"europe-west3", geo.Point{Latitude: 50.11, Longitude: 8.68}, 1},     // Frankfurt
		{"us-east-1", geo.Point{Latitude: 38.91, Longitude: -77.04}, 50},     // Washington
		{"ap-northeast-1", geo.Point{Latitude: 35.68, Longitude: 139.69}, 1}, // Tokyo
		{"westeurope", geo.Point{Latitude: 52.37, Longitude: 4.90}, 1},       // Amsterdam
		{"australiaeast", geo.Point{Latitude: -33.87, Longitude: 151.21}, 5}, // Sydney
		{"southamerica-east1", geo.Point{Latitude: -23.55, Longitude: -46.63}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.region, func(t *testing.T) {
			p, ok := Lookup(tt.region)
			if !ok {
				t.Fatalf("region %s is not in the table", tt.region)
			}
			if d := geo.Distance(p, tt.near); d > tt.km {
				t.Errorf("region %s at %v is %.0f km from %v, want at most %.0f", tt.region, p, d, tt.near, tt.km)
			}
		})
	}
	for _, name := range []string{"", "us-east", "mars-north1", "US-EAST1"} {
		if p, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) = %v, want no location", name, p)
		}
	}
}

func TestTableHoldsEachRegionOnceOnTheMap(t *testing.T) {
	seen := map[string]bool{}
	providers := map[string]int{}
	for _, r := range All() {
		if seen[r.Name] {
			t.Errorf("region %s is listed twice", r.Name)
		}
		seen[r.Name] = true
		providers[r.Provider]++
		if err := r.Check(); err != nil {
			t.Errorf("region %s: %v", r.Name, err)
		}
		if r.Latitude == 0 && r.Longitude == 0 {
			t.Errorf("region %s is at 0,0", r.Name)
		}
	}
	for _, p := range []string{"aws", "gcp", "azure"} {
		if providers[p] < 30 {
			t.Errorf("%d regions of %s, want the provider's regions (30 or more)", providers[p], p)
		}
	}
}
