package publish

import (
	"testing"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestJudgeGivesEachRowTheQuorumsVerdict(t *testing.T) {
	checkers := func(down ...string) Health {
		var cs []Checker
		for _, name := range []string{"k1", "k2", "k3"} {
			c := Checker{Name: name, Unhealthy: map[string]string{}}
			for _, cl := range down {
				c.Unhealthy[kfedv1alpha1.EndpointKey("shop", "web", cl)] = "connection refused"
			}
			cs = append(cs, c)
		}
		return NewHealth(cs, 0)
	}
	tests := []struct {
		name      string
		health    Health
		previous  map[string]dnsendpoint.Cluster
		unhealthy []bool // of the rows c1, c2 afterwards
		verdicts  int
		was       []bool
	}{
		{"every checker finds c2 down", checkers("c2"), nil, []bool{false, true}, 2, []bool{true, true}},
		{"a row found down before was not healthy", checkers(), map[string]dnsendpoint.Cluster{"c1": {Name: "c1", Unhealthy: true}},
			[]bool{false, false}, 2, []bool{false, true}},
		{"without checkers nothing is judged: a kept verdict stands", NewHealth(nil, 0), nil, []bool{false, true}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := []dnsendpoint.Cluster{{Name: "c1"}, {Name: "c2", Unhealthy: true}}
			got := tt.health.Judge("shop", "web", rows, tt.previous)
			if len(got) != tt.verdicts {
				t.Fatalf("%d verdicts, want %d: %+v", len(got), tt.verdicts, got)
			}
			for i, r := range rows {
				if r.Unhealthy != tt.unhealthy[i] {
					t.Errorf("row %s unhealthy %v, want %v", r.Name, r.Unhealthy, tt.unhealthy[i])
				}
				if i < len(got) && (got[i].Cluster != r.Name || got[i].Was != tt.was[i] || got[i].Healthy == r.Unhealthy) {
					t.Errorf("verdict %+v for row %+v, want was %v", got[i], r, tt.was[i])
				}
			}
		})
	}
}
