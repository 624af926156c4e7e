package dnsprovider

import (
	"slices"
	"testing"
)

func TestProximity(t *testing.T) {
	ny, fra := &Location{40.71, -74.01}, &Location{50.11, 8.68}
	set := func(id string, w int64, l *Location) RecordSet {
		return RecordSet{Name: "web.example.com", Type: "A", TTL: 30, SetIdentifier: id, Weight: w, Location: l, Targets: []string{"10.0.0.1"}}
	}
	tests := []struct {
		name string
		in   []RecordSet
		want []string
	}{
		{"placed clusters form a policy without weights",
			[]RecordSet{set("c1", 3, ny), set("c2", 5, fra)},
			[]string{"web.example.com [set=c1 near=40.71,-74.01] 30 A 10.0.0.1", "web.example.com [set=c2 near=50.11,8.68] 30 A 10.0.0.1"}},
		{"a cluster of weight 0 leaves the policy while another has weight",
			[]RecordSet{set("c1", 0, ny), set("c2", 5, fra)},
			[]string{"web.example.com [set=c2 near=50.11,8.68] 30 A 10.0.0.1"}},
		{"all of weight 0 stay",
			[]RecordSet{set("c1", 0, ny), set("c2", 0, fra)},
			[]string{"web.example.com [set=c1 near=40.71,-74.01] 30 A 10.0.0.1", "web.example.com [set=c2 near=50.11,8.68] 30 A 10.0.0.1"}},
		{"a cluster on no map keeps the name weighted, weights and all",
			[]RecordSet{set("c1", 3, ny), set("c2", 5, nil)},
			[]string{"web.example.com [set=c1 weight=3] 30 A 10.0.0.1", "web.example.com [set=c2 weight=5] 30 A 10.0.0.1"}},
		{"weighted record sets pass as they are",
			[]RecordSet{set("c1", 0, nil), set("c2", 5, nil)},
			[]string{"web.example.com [set=c1 weight=0] 30 A 10.0.0.1", "web.example.com [set=c2 weight=5] 30 A 10.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			var got []string
			for _, rs := range Proximity(tt.in) {
				got = append(got, rs.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			for i := range in {
				if !in[i].Equal(tt.in[i]) {
					t.Errorf("input %d changed: %v", i, tt.in[i])
				}
			}
		})
	}
}

func TestLocationIsPartOfTheValue(t *testing.T) {
	a := MustNormalize(RecordSet{Name: "w.example.com", Type: "A", SetIdentifier: "c1", Location: &Location{1, 2}, Targets: []string{"10.0.0.1"}})
	b := a
	b.Location = &Location{1, 2.5}
	if a.Equal(b) {
		t.Error("record sets at different locations compare equal")
	}
	c := a
	c.Location = nil
	if a.Equal(c) {
		t.Error("a proximity record set equals a weighted one")
	}
	if _, err := Normalize(RecordSet{Name: "w.example.com", Type: "A", SetIdentifier: "c1", Location: &Location{91, 0}, Targets: []string{"10.0.0.1"}}); err == nil {
		t.Error("latitude 91 normalised without error")
	}
	if n := MustNormalize(RecordSet{Name: "w.example.com", Type: "A", Location: &Location{1, 2}, Targets: []string{"10.0.0.1"}}); n.Location != nil {
		t.Error("a plain record set kept a location")
	}
}
