package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// requirePlanCommand stops the test unless the root command has `kfed plan`.
func requirePlanCommand(t *testing.T) {
	t.Helper()
	root := newRootCommand()
	if cmd, _, err := root.Find([]string{"plan"}); err != nil || cmd == root || cmd.Name() != "plan" {
		t.Fatal("kfed plan is not registered: newRootCommand must add newPlanCommand()")
	}
}

// runPlan runs `kfed plan` through the root command with stdin and returns
// what it wrote on stdout.
func runPlan(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(append([]string{"plan"}, args...))
	err := root.ExecuteContext(context.Background())
	return stdout.String(), err
}

func TestPlanCommandWritesOnePlan(t *testing.T) {
	requirePlanCommand(t)
	tests := []struct {
		name         string
		stdin        string
		want         map[string]int64
		wantOverflow map[string]int64
	}{
		{
			name: "the DESIGN.md example gives A=22 B=22 C=6 and an empty overflow",
			stdin: `{"key": "ns/name", "total": 50, "rebalance": true,
			 "clusters": ["A", "B", "C"],
			 "preferences": {"*": {"weight": 1}, "C": {"minReplicas": 0, "maxReplicas": 20, "weight": 1}},
			 "capacity": {"C": 6},
			 "current": {"A": 20}}`,
			want: map[string]int64{"A": 22, "B": 22, "C": 6},
		},
		{
			name: "priority fills the first target to its max and falls back for pods that do not start",
			stdin: `{"key": "ns/web", "total": 10, "clusters": ["east", "west", "north"],
			 "policy": "priority", "targetOrder": ["east", "west", "north"],
			 "preferences": {"east": {"maxReplicas": 6}, "west": {"maxReplicas": 3}},
			 "current": {"east": 6, "west": 3}, "notStarted": {"west": 2}}`,
			want: map[string]int64{"east": 6, "west": 3, "north": 3},
		},
		{
			name:  "without rebalance a scale-down takes replicas only from above the weighted share",
			stdin: `{"key": "ns/web", "total": 50, "clusters": ["A", "B"], "preferences": {"*": {"weight": 1}}, "current": {"A": 10, "B": 70}}`,
			want:  map[string]int64{"A": 10, "B": 40},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runPlan(t, tt.stdin)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(out, "}\n") || strings.Count(out, "\n") != 1 {
				t.Errorf("output %q, want one JSON object and a newline", out)
			}
			var got struct {
				Replicas map[string]int64 `json:"replicas"`
				Overflow map[string]int64 `json:"overflow"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if !maps.Equal(got.Replicas, tt.want) {
				t.Errorf("replicas %v, want %v", got.Replicas, tt.want)
			}
			if got.Overflow == nil || !maps.Equal(got.Overflow, tt.wantOverflow) && len(got.Overflow)+len(tt.wantOverflow) > 0 {
				t.Errorf("overflow %v in %s, want %v (always an object)", got.Overflow, out, tt.wantOverflow)
			}
		})
	}
}

func TestPlanCommandRejectsInvalidInput(t *testing.T) {
	requirePlanCommand(t)
	tests := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{name: "empty stdin", stdin: "", want: "reading the request on stdin: no input: want one JSON object"},
		{name: "malformed JSON", stdin: `{"total": 5, "clusters": ["A"]`, want: "reading the request on stdin: malformed JSON"},
		{name: "a field the contract does not have", stdin: `{"total": 5, "clusters": ["A"], "replica": 3}`,
			want: `unknown field "replica" (want one of: key, total, rebalance, clusters,`},
		{name: "negative total", stdin: `{"total": -5, "clusters": ["A"]}`, want: "invalid request: total -5 is negative"},
		{name: "negative capacity", stdin: `{"total": 5, "clusters": ["A"], "capacity": {"A": -1}}`,
			want: `invalid request: capacity["A"] -1 is negative`},
		{name: "max below min", stdin: `{"total": 5, "clusters": ["A"], "preferences": {"A": {"minReplicas": 4, "maxReplicas": 2}}}`,
			want: `invalid request: preferences["A"]: maxReplicas 2 is less than minReplicas 4`},
		{name: "unknown policy", stdin: `{"total": 5, "clusters": ["A"], "policy": "fastest"}`,
			want: `invalid request: unknown policy "fastest" (want "priority" or "proportional"`},
		{name: "priority target that does not exist", stdin: `{"total": 5, "clusters": ["A"], "policy": "priority", "targetOrder": ["A", "B"]}`,
			want: `invalid request: targetOrder[1]: "B" is not in clusters`},
		{name: "missing total", stdin: `{"clusters": ["A"]}`, want: `invalid request: "total" is required`},
		{name: "no cluster has a weight, so nothing is placed", stdin: `{"total": 5, "clusters": ["A", "B"]}`,
			want: `invalid request: none of the 5 replicas has a cluster: every cluster has weight 0 and no minReplicas (a cluster without a preferences entry has weight 0; add "preferences": {"*": {"weight": 1}}`},
		{name: "arguments", stdin: `{}`, args: []string{"extra"}, want: `kfed plan takes no arguments, not ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runPlan(t, tt.stdin, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if out != "" {
				t.Errorf("wrote %q on stdout despite the error", out)
			}
		})
	}
}

func TestPlanCommandReportsReplicasItCannotPlace(t *testing.T) {
	tests := []struct {
		name, stdin  string
		wantUnplaced int64
		wantStderr   string
	}{
		{name: "maxReplicas keeps 6 of 10 out", stdin: `{"total": 10, "clusters": ["A", "B"], "preferences": {"*": {"weight": 1, "maxReplicas": 2}}}`,
			wantUnplaced: 6, wantStderr: "kfed plan: 6 of 10 replicas have no cluster: maxReplicas or weight 0 keeps them out of [A B]\n"},
		{name: "a minimum places some without weights", stdin: `{"total": 4, "clusters": ["A", "B"], "preferences": {"A": {"minReplicas": 1}}}`,
			wantUnplaced: 3, wantStderr: "kfed plan: 3 of 4 replicas have no cluster"},
		{name: "capacity overflow is not unplaced", stdin: `{"total": 10, "clusters": ["A"], "preferences": {"*": {"weight": 1}}, "capacity": {"A": 4}}`},
		{name: "a total of zero places nothing and is fine", stdin: `{"total": 0, "clusters": ["A"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCommand()
			var stdout, stderr bytes.Buffer
			root.SetIn(strings.NewReader(tt.stdin))
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			root.SetArgs([]string{"plan"})
			if err := root.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("exit with %v, want a plan", err)
			}
			var got struct {
				Unplaced *int64 `json:"unplaced"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("output %q: %v", stdout.String(), err)
			}
			switch {
			case tt.wantUnplaced == 0 && got.Unplaced != nil:
				t.Errorf("output %s has unplaced, want none", stdout.String())
			case tt.wantUnplaced > 0 && (got.Unplaced == nil || *got.Unplaced != tt.wantUnplaced):
				t.Errorf("output %s, want unplaced %d", stdout.String(), tt.wantUnplaced)
			}
			if !strings.HasPrefix(stderr.String(), tt.wantStderr) || tt.wantStderr == "" && stderr.Len() > 0 {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
