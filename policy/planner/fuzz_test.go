package planner

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRequest feeds arbitrary bytes to the `kfed plan` path: decoding never
// panics, and every plan it accepts keeps the invariants.
func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		designExample,
		`{"total": 50, "clusters": ["A", "B", "C"], "preferences": {"*": {"weight": 1}}, "current": {"A": 30}, "capacity": {"C": 6}}`,
		`{"total": 50, "clusters": ["A", "B"], "preferences": {"*": {"weight": 1}}, "current": {"A": 10, "B": 70}}`,
		`{"total": 50, "clusters": ["A", "B", "C"], "preferences": {"A": {"weight": 1000000}, "B": {"weight": 1}, "C": {"weight": 1}}, "capacity": {"A": 40}}`,
		`{"total": 50, "clusters": ["A", "B", "C"], "preferences": {"*": {"minReplicas": 20}}}`,
		`{"total": 10, "clusters": ["a", "b"], "policy": "priority", "targetOrder": ["a", "b"], "current": {"a": 3, "b": 3}, "notStarted": {"a": 2, "b": 2}}`,
		`{"total": 12, "clusters": ["a", "b", "c"], "policy": "proportional", "proportions": {"a": 1, "b": 1, "c": 2}, "preferences": {"c": {"maxReplicas": 3}}, "current": {"a": 3}, "notStarted": {"a": 3}}`,
		`{"total": 1, "clusters": ["A"], "policy": "spread"}`,
		`{"total": -1}`,
		`{"total": 5, "clusters": ["A"], "preferences": {"A": {"minReplicas": 3, "maxReplicas": 1}}}`,
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(bytes.NewReader(data))
		if err != nil {
			return
		}
		resp, err := req.Plan()
		if err != nil {
			return
		}
		if resp.Replicas == nil || resp.Overflow == nil {
			t.Fatalf("%s: response %+v has a nil map", data, resp)
		}
		if len(resp.Replicas) != len(req.Clusters) {
			t.Fatalf("%s: replicas %v, want one entry per cluster", data, resp.Replicas)
		}
		prefs := Preferences{Clusters: req.Preferences}
		var sum int64
		for _, name := range req.Clusters {
			n, ok := resp.Replicas[name]
			if !ok || n < 0 {
				t.Fatalf("%s: cluster %s has %d (present %v)", data, name, n, ok)
			}
			sum += n
			p, has := prefs.For(name)
			if has && p.MaxReplicas != nil && n > *p.MaxReplicas {
				t.Fatalf("%s: cluster %s has %d, above its max %d", data, name, n, *p.MaxReplicas)
			}
			if req.Policy == "" {
				if c, ok := req.Capacity[name]; ok && n > c {
					t.Fatalf("%s: cluster %s has %d, above its capacity %d", data, name, n, c)
				}
			} else if n < p.MinReplicas {
				t.Fatalf("%s: target %s has %d, below its min %d", data, name, n, p.MinReplicas)
			}
		}
		if req.Policy == "" && sum > *req.Total {
			t.Fatalf("%s: plans %d replicas, more than the total %d", data, sum, *req.Total)
		}
		for name, n := range resp.Overflow {
			if _, ok := resp.Replicas[name]; !ok || n <= 0 {
				t.Fatalf("%s: overflow %v names %s", data, resp.Overflow, name)
			}
		}
		out, err := json.Marshal(resp)
		if err != nil || !bytes.Contains(out, []byte(`"overflow":{`)) {
			t.Fatalf("%s: encoded as %s, %v", data, out, err)
		}
	})
}
