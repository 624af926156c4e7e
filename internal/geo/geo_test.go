package geo

import (
	"math"
	"testing"
)

func TestDistance(t *testing.T) {
	var (
		newYork   = Point{40.71, -74.01}
		frankfurt = Point{50.11, 8.68}
		tokyo     = Point{35.68, 139.69}
	)
	tests := []struct {
		name string
		a, b Point
		km   float64 // published great-circle distances, to 1%
	}{
		{"a point is 0 km from itself", newYork, newYork, 0},
		{"New York to Frankfurt is about 6,200 km", newYork, frankfurt, 6204},
		{"Frankfurt to Tokyo is about 9,350 km", frankfurt, tokyo, 9353},
		{"New York to Tokyo is about 10,850 km", newYork, tokyo, 10853},
		{"pole to pole is half the circumference", Point{90, 0}, Point{-90, 0}, math.Pi * EarthRadius},
		{"across the antimeridian is short", Point{0, 179.5}, Point{0, -179.5}, 111.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Distance(tt.a, tt.b)
			if math.Abs(got-tt.km) > 0.01*tt.km+0.001 {
				t.Errorf("Distance(%v, %v) = %.1f km, want %.1f", tt.a, tt.b, got, tt.km)
			}
			if back := Distance(tt.b, tt.a); back != got {
				t.Errorf("distance is not symmetric: %v and %v", got, back)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Point
		wantErr bool
	}{
		{in: "40.71,-74.01", want: Point{40.71, -74.01}},
		{in: " 50.11 , 8.68 ", want: Point{50.11, 8.68}},
		{in: "-90,180", want: Point{-90, 180}},
		{in: "40.71", wantErr: true},
		{in: "91,0", wantErr: true},
		{in: "0,-180.5", wantErr: true},
		{in: "north,east", wantErr: true},
		{in: "NaN,0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
			}
			if err == nil {
				if again, err := Parse(got.String()); err != nil || again != got {
					t.Errorf("String %q does not read back: %v, %v", got.String(), again, err)
				}
			}
		})
	}
}

func TestWithin(t *testing.T) {
	a, b := Vector(Point{50.11, 8.68}), Vector(Point{50.45, 3.82}) // Frankfurt, St. Ghislain: ~348 km
	for _, tt := range []struct {
		km   float64
		want bool
	}{{300, false}, {400, true}, {0, false}} {
		if got := a.Within(b, tt.km); got != tt.want {
			t.Errorf("Within(%v km) = %v, want %v (distance %.0f km)", tt.km, got, tt.want, a.Distance(b))
		}
	}
	if !a.Within(a, 1) {
		t.Error("a point is not within 1 km of itself")
	}
}
