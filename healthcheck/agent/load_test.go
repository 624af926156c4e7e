package agent

import (
	"testing"
	"time"

	"github.com/kfed-io/kfed/healthcheck"
)

// The table changes, and so the report is written, only when a bucket does:
// a load wandering within its bucket writes nothing; the published figure
// is the bucket's middle, with when the bucket was first published.
func TestLoadTableWritesOnlyMaterialChanges(t *testing.T) {
	var table loadTable
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := func(u map[string]float64) map[string]healthcheck.Load {
		out := map[string]healthcheck.Load{}
		for k, v := range u {
			out[k] = healthcheck.Load{Utilization: v}
		}
		return out
	}
	steps := []struct {
		name     string
		measured map[string]float64
		changed  bool
		want     map[string]string // published
		since    time.Duration     // of "ns/a/c1"
	}{
		{"nothing yet", nil, false, map[string]string{}, 0},
		{"first figures", map[string]float64{"ns/a/c1": 0.31, "ns/a/c2": 0.97}, true, map[string]string{"ns/a/c1": "310m", "ns/a/c2": "970m"}, 1},
		{"noise writes nothing", map[string]float64{"ns/a/c1": 0.301, "ns/a/c2": 0.978}, false, nil, 1},
		{"a move is published", map[string]float64{"ns/a/c1": 0.6, "ns/a/c2": 0.978}, true, map[string]string{"ns/a/c1": "610m", "ns/a/c2": "970m"}, 3},
		{"an endpoint without a figure leaves", map[string]float64{"ns/a/c1": 0.6}, true, map[string]string{"ns/a/c1": "610m"}, 3},
	}
	for i, s := range steps {
		now := t0.Add(time.Duration(i) * time.Second)
		if got := table.update(now, m(s.measured)); got != s.changed {
			t.Errorf("%s: changed %v, want %v", s.name, got, s.changed)
		}
		if s.want == nil {
			continue
		}
		got := map[string]string{}
		for _, l := range table.published() {
			got[l.Endpoint] = l.Utilization.String()
			if l.Endpoint == "ns/a/c1" && !l.Since.Time.Equal(t0.Add(s.since*time.Second)) {
				t.Errorf("%s: since %v, want %v", s.name, l.Since, t0.Add(s.since*time.Second))
			}
		}
		if len(got) != len(s.want) {
			t.Errorf("%s: published %v, want %v", s.name, got, s.want)
		}
		for k, v := range s.want {
			if got[k] != v {
				t.Errorf("%s: published %v, want %v", s.name, got, s.want)
			}
		}
	}
}
