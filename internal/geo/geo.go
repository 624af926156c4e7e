// Package geo is points on the Earth and the distance between them, for
// ordering a federation's clusters by how far they are from a client or from
// each other. It knows nothing of DNS or Kubernetes.
package geo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// EarthRadius is the Earth's mean radius in kilometres (IUGG), the sphere
// Distance measures on. The Earth is not a sphere, but the error (under
// 0.5%) is far below what ordering data centres needs.
const EarthRadius = 6371.0088

// Point is a place in decimal degrees: latitude -90 (south) to 90 (north),
// longitude -180 (west) to 180 (east).
type Point struct {
	Latitude  float64
	Longitude float64
}

// Check reports whether p is a place on the Earth.
func (p Point) Check() error {
	switch {
	case math.IsNaN(p.Latitude) || p.Latitude < -90 || p.Latitude > 90:
		return fmt.Errorf("latitude %v is not within -90 to 90", p.Latitude)
	case math.IsNaN(p.Longitude) || p.Longitude < -180 || p.Longitude > 180:
		return fmt.Errorf("longitude %v is not within -180 to 180", p.Longitude)
	}
	return nil
}

// String is "LAT,LON", as Parse reads it.
func (p Point) String() string {
	return strconv.FormatFloat(p.Latitude, 'f', -1, 64) + "," + strconv.FormatFloat(p.Longitude, 'f', -1, 64)
}

// Parse reads "LAT,LON" in decimal degrees, such as "40.71,-74.01".
func Parse(s string) (Point, error) {
	lat, lon, ok := strings.Cut(s, ",")
	if !ok {
		return Point{}, fmt.Errorf("location %q is not LATITUDE,LONGITUDE", s)
	}
	return ParseLatLon(strings.TrimSpace(lat), strings.TrimSpace(lon))
}

// ParseLatLon reads a latitude and a longitude in decimal degrees.
func ParseLatLon(lat, lon string) (Point, error) {
	var p Point
	var err, errs error
	if p.Latitude, err = strconv.ParseFloat(lat, 64); err != nil {
		errs = fmt.Errorf("latitude %q is not a number", lat)
	}
	if p.Longitude, err = strconv.ParseFloat(lon, 64); err != nil {
		errs = errors.Join(errs, fmt.Errorf("longitude %q is not a number", lon))
	}
	if errs != nil {
		return Point{}, errs
	}
	if err := p.Check(); err != nil {
		return Point{}, err
	}
	return p, nil
}

// Distance is the great-circle distance between a and b in kilometres.
func Distance(a, b Point) float64 {
	return Vector(a).Distance(Vector(b))
}

// Vec is a point as a unit vector from the Earth's centre. Two points'
// distance is then one dot product and an arccosine, which is what makes
// ordering clusters per query cheap: each cluster's vector is computed once.
type Vec struct{ X, Y, Z float64 }

// Vector returns p's unit vector.
func Vector(p Point) Vec {
	lat, lon := p.Latitude*math.Pi/180, p.Longitude*math.Pi/180
	sinLat, cosLat := math.Sincos(lat)
	sinLon, cosLon := math.Sincos(lon)
	return Vec{cosLat * cosLon, cosLat * sinLon, sinLat}
}

// Within reports whether v and w are at most km apart, without the
// arccosine Distance takes.
func (v Vec) Within(w Vec, km float64) bool {
	return v.X*w.X+v.Y*w.Y+v.Z*w.Z >= math.Cos(km/EarthRadius)
}

// Distance is the great-circle distance between v and w in kilometres.
func (v Vec) Distance(w Vec) float64 {
	dot := v.X*w.X + v.Y*w.Y + v.Z*w.Z
	// Rounding can take a dot product of unit vectors just past ±1, where
	// the arccosine is NaN.
	return math.Acos(max(-1, min(1, dot))) * EarthRadius
}
