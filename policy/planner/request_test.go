package planner

import (
	"encoding/json"
	"strings"
	"testing"
)

// designExample is the request of DESIGN.md, "Contract: kfed plan".
const designExample = `{"key": "ns/name", "total": 50, "rebalance": true,
 "clusters": ["A", "B", "C"],
 "preferences": {"*": {"weight": 1}, "C": {"minReplicas": 0, "maxReplicas": 20, "weight": 1}},
 "capacity": {"C": 6},
 "current": {"A": 20}}`

func planJSON(t *testing.T, request string) (string, error) {
	t.Helper()
	req, err := DecodeRequest(strings.NewReader(request))
	if err != nil {
		return "", err
	}
	resp, err := req.Plan()
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), nil
}

func TestRequestPlans(t *testing.T) {
	tests := []struct{ name, request, want string }{
		{
			name:    "the DESIGN.md example gives A=22 B=22 C=6 with an empty overflow object",
			request: designExample,
			want:    `{"replicas":{"A":22,"B":22,"C":6},"overflow":{}}`,
		},
		{
			name:    "absent capacity and current mean unbounded and none",
			request: `{"total": 6, "clusters": ["A", "B"], "preferences": {"*": {"weight": 1}}}`,
			want:    `{"replicas":{"A":3,"B":3},"overflow":{}}`,
		},
		{
			name:    "an empty cluster list plans nothing",
			request: `{"total": 6, "clusters": []}`,
			want:    `{"replicas":{},"overflow":{}}`,
		},
		{
			name: "maxReplicas null means no cap",
			request: `{"total": 6, "clusters": ["A", "B"],
				"preferences": {"A": {"maxReplicas": null, "weight": 2}, "B": {"maxReplicas": 1, "weight": 1}}}`,
			want: `{"replicas":{"A":5,"B":1},"overflow":{}}`,
		},
		{
			name: "policy priority plans a Balancer with fallback",
			request: `{"total": 10, "clusters": ["a", "b"], "policy": "priority", "targetOrder": ["a", "b"],
				"preferences": {"a": {"maxReplicas": 8}}, "current": {"a": 8}, "notStarted": {"a": 3}}`,
			want: `{"replicas":{"a":8,"b":5},"overflow":{}}`,
		},
		{
			name: "policy proportional plans a Balancer by proportions",
			request: `{"total": 10, "clusters": ["a", "b"], "policy": "proportional",
				"proportions": {"a": 3, "b": 2}}`,
			want: `{"replicas":{"a":6,"b":4},"overflow":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planJSON(t, tt.request)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRequestErrorsSayWhatToFix(t *testing.T) {
	tests := []struct{ name, request, want string }{
		{"empty input", ``, "no input: want one JSON object"},
		{"null", `null`, "want a JSON object, got null"},
		{"an array", `[1, 2]`, "want a JSON object, got an array"},
		{"malformed JSON", `{"total": 5,`, "malformed JSON"},
		{"a syntax error", `{"total": 5 "clusters": []}`, "malformed JSON at byte 13"},
		{"two objects", `{"total": 1, "clusters": []} {}`, "unexpected data after the JSON object"},
		{"unknown field", `{"total": 1, "clusters": [], "replicas": 3}`, `unknown field "replicas" (want one of: key, total,`},
		{"field in the wrong case", `{"Total": 1, "clusters": []}`, `unknown field "Total"`},
		{"unknown preference field", `{"total": 1, "clusters": [], "preferences": {"A": {"max": 3}}}`,
			`preferences["A"]: unknown field "max" (want one of: minReplicas, maxReplicas, weight)`},
		{"total as a string", `{"total": "50", "clusters": []}`, "total: want a whole number, got string"},
		{"fractional replicas", `{"total": 5, "clusters": ["A"], "capacity": {"A": 2.5}}`, "capacity: want a whole number, got number 2.5"},
		{"clusters as an object", `{"total": 5, "clusters": {"A": 1}}`, "clusters: want an array, got object"},
		{"missing total", `{"clusters": ["A"]}`, `"total" is required`},
		{"missing clusters", `{"total": 3}`, `"clusters" is required`},
		{"negative total", `{"total": -1, "clusters": []}`, "invalid request: total -1 is negative"},
		{"negative capacity", `{"total": 1, "clusters": ["A"], "capacity": {"A": -2}}`, `capacity["A"] -2 is negative`},
		{"max below min", `{"total": 1, "clusters": ["A"], "preferences": {"A": {"minReplicas": 3, "maxReplicas": 1}}}`,
			`preferences["A"]: maxReplicas 1 is less than minReplicas 3`},
		{"duplicate cluster", `{"total": 1, "clusters": ["A", "A"]}`, `clusters[1]: "A" is listed twice`},
		{"unknown policy", `{"total": 1, "clusters": ["A"], "policy": "spread"}`, `unknown policy "spread" (want "priority" or "proportional"`},
		{"priority target that does not exist", `{"total": 1, "clusters": ["A"], "policy": "priority", "targetOrder": ["A", "B"]}`,
			`targetOrder[1]: "B" is not in clusters`},
		{"proportions for an unknown target", `{"total": 1, "clusters": ["A"], "policy": "proportional", "proportions": {"B": 1}}`,
			`proportions names "B", which is not in clusters`},
		{"targetOrder without policy", `{"total": 1, "clusters": ["A"], "targetOrder": ["A"]}`, `targetOrder only applies with "policy": "priority"`},
		{"notStarted without policy", `{"total": 1, "clusters": ["A"], "notStarted": {"A": 1}}`, "notStarted only applies with a Balancer policy"},
		{"capacity with a policy", `{"total": 1, "clusters": ["A"], "policy": "priority", "targetOrder": ["A"], "capacity": {"A": 1}}`,
			`capacity does not apply to policy "priority"`},
		{"rebalance with a policy", `{"total": 1, "clusters": ["A"], "policy": "proportional", "proportions": {}, "rebalance": true}`,
			`rebalance does not apply to policy "proportional"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planJSON(t, tt.request)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("planned %s, error %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}
