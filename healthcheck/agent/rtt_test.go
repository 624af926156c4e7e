package agent

import (
	"testing"
	"time"

	"github.com/kfed-io/kfed/policy/proximity"
)

// The table changes, and so the report is written, only when a bucket does:
// noise around a measure writes nothing.
func TestRTTTableWritesOnlyMaterialChanges(t *testing.T) {
	const ms = time.Millisecond
	var table rttTable
	steps := []struct {
		name     string
		measured map[string]time.Duration
		changed  bool
		want     map[string]time.Duration // published
	}{
		{"nothing measured yet", nil, false, map[string]time.Duration{}},
		{"first measures are published", map[string]time.Duration{"b": 400 * time.Microsecond, "c": 80 * ms},
			true, map[string]time.Duration{"b": proximity.BucketRTT(0), "c": proximity.BucketRTT(proximity.Bucket(80 * ms))}},
		{"jitter on loopback writes nothing", map[string]time.Duration{"b": 900 * time.Microsecond, "c": 80 * ms}, false, nil},
		{"a few per cent either way writes nothing", map[string]time.Duration{"b": 400 * time.Microsecond, "c": 86 * ms}, false, nil},
		{"back again writes nothing", map[string]time.Duration{"b": 400 * time.Microsecond, "c": 76 * ms}, false, nil},
		{"a material move is published", map[string]time.Duration{"b": 400 * time.Microsecond, "c": 150 * ms},
			true, map[string]time.Duration{"b": proximity.BucketRTT(0), "c": proximity.BucketRTT(proximity.Bucket(150 * ms))}},
		{"a cluster no longer measured leaves", map[string]time.Duration{"c": 150 * ms},
			true, map[string]time.Duration{"c": proximity.BucketRTT(proximity.Bucket(150 * ms))}},
	}
	for _, s := range steps {
		if got := table.update(s.measured); got != s.changed {
			t.Errorf("%s: changed %v, want %v", s.name, got, s.changed)
		}
		if s.want == nil {
			continue
		}
		got := map[string]time.Duration{}
		for _, r := range table.published() {
			got[r.Cluster] = r.RTT.Duration
		}
		if len(got) != len(s.want) {
			t.Errorf("%s: published %v, want %v", s.name, got, s.want)
		}
		for c, d := range s.want {
			if got[c] != d {
				t.Errorf("%s: published %v, want %v", s.name, got, s.want)
			}
		}
	}
}
