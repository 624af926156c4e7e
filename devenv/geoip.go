package devenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/kfed-io/kfed/internal/geo"
)

// GeoPlace is one network of a GeoIP database the dev bed writes, and where
// its clients are.
type GeoPlace struct {
	Network netip.Prefix
	City    string
	Country string // ISO 3166-1 alpha-2
	geo.Point
}

// DevPlaces are the networks of the edge CoreDNS's database in `kfed dev up`
// (a contract scripts rely on): the three documentation networks of RFC 5737,
// which no real client has, in New York, Frankfurt and Tokyo.
func DevPlaces() []GeoPlace {
	return []GeoPlace{
		{Network: netip.MustParsePrefix("192.0.2.0/24"), City: "New York", Country: "US", Point: geo.Point{Latitude: 40.71, Longitude: -74.01}},
		{Network: netip.MustParsePrefix("198.51.100.0/24"), City: "Frankfurt am Main", Country: "DE", Point: geo.Point{Latitude: 50.11, Longitude: 8.68}},
		{Network: netip.MustParsePrefix("203.0.113.0/24"), City: "Tokyo", Country: "JP", Point: geo.Point{Latitude: 35.68, Longitude: 139.69}},
	}
}

// WriteGeoIP writes a GeoIP2 City database (MaxMind DB format) placing the
// networks of places, for CoreDNS's geoip plugin, at path. Its records hold
// what geoip reads of a City database: city, country, continent-less
// location.
func WriteGeoIP(path string, places []GeoPlace) error {
	w, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: "GeoIP2-City",
		Description:  map[string]string{"en": "kfed dev bed: documentation networks placed in cities"},
		Languages:    []string{"en"},
		// The documentation networks are reserved; they are the point here.
		IncludeReservedNetworks: true,
		RecordSize:              24,
	})
	if err != nil {
		return fmt.Errorf("geoip database: %w", err)
	}
	for _, p := range places {
		if err := p.Check(); err != nil {
			return fmt.Errorf("geoip database: %s: %w", p.Network, err)
		}
		network := &net.IPNet{IP: p.Network.Masked().Addr().AsSlice(), Mask: net.CIDRMask(p.Network.Bits(), p.Network.Addr().BitLen())}
		record := mmdbtype.Map{
			"city":    mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(p.City)}},
			"country": mmdbtype.Map{"iso_code": mmdbtype.String(p.Country)},
			"location": mmdbtype.Map{
				"latitude":  mmdbtype.Float64(p.Latitude),
				"longitude": mmdbtype.Float64(p.Longitude),
			},
		}
		if err := w.Insert(network, record); err != nil {
			return fmt.Errorf("geoip database: inserting %s: %w", p.Network, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("geoip database: %w", err)
	}
	if _, err := w.WriteTo(f); err != nil {
		return errors.Join(fmt.Errorf("writing geoip database %s: %w", path, err), f.Close())
	}
	return f.Close()
}

// EdgeCorefile is a server block for an edge CoreDNS: the kfed plugin for no
// cluster, behind CoreDNS's metadata and geoip plugins, geoip reading the
// database at geoipDB and locating a query by its EDNS Client Subnet when it
// has one (else by its source address). z.Cluster must be empty.
func EdgeCorefile(z KfedZone, geoipDB string) string {
	z.Extra = append([]string{"metadata", "geoip " + quote(geoipDB) + " {\n\t\tedns-subnet\n\t}"}, z.Extra...)
	return KfedCorefile(z)
}

// StartEdgeCoreDNS writes the dev bed's GeoIP database (DevPlaces) into the
// environment's folder and runs an edge CoreDNS (EdgeCorefile) with it,
// owned by the control plane.
func (e *Env) StartEdgeCoreDNS(ctx context.Context, binary string, z KfedZone) (*CoreDNS, error) {
	db := filepath.Join(e.Dir, "geoip.mmdb")
	if err := WriteGeoIP(db, DevPlaces()); err != nil {
		return nil, err
	}
	return e.StartCoreDNS(ctx, CoreDNSOptions{Binary: binary, Name: "coredns-edge", Zone: z.Zone, Corefile: EdgeCorefile(z, db)})
}

// quote quotes a path for a Corefile when it has spaces.
func quote(path string) string {
	if strings.ContainsAny(path, " \t\"") {
		return fmt.Sprintf("%q", path)
	}
	return path
}
