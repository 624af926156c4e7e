package status

import (
	"fmt"
	"testing"

	"github.com/kfed-io/kfed/healthcheck"
)

func TestDescribeSaysAnEndpointsVerdictAndWhoSeesItDown(t *testing.T) {
	votes := Votes{checkers: 3, down: map[string][]string{"shop/web/c2": {"checker-a", "checker-b"}}}
	verdicts := map[string]bool{"c1": true, "c2": false}
	tests := []struct {
		name, endpoint, cluster, want string
	}{
		{"a healthy endpoint nobody finds down", "shop/web/c1", "c1", "healthy (0/3 down)"},
		{"an endpoint out of DNS names who sees it down", "shop/web/c2", "c2", "out (2/3 down: checker-a, checker-b)"},
		{"a cluster without an endpoint has no verdict", "shop/web/c3", "c3", "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := votes.Describe(tt.endpoint, verdicts, tt.cluster); got != tt.want {
				t.Errorf("describe = %q, want %q", got, tt.want)
			}
		})
	}
	if got := (Votes{}).Describe("shop/web/c1", verdicts, "c1"); got != "-" {
		t.Errorf("without checkers: %q, want -", got)
	}

	// In a fleet of five assigning each endpoint three, only the
	// endpoint's panel is counted, and named.
	var members []healthcheck.Checker
	var names []string
	for i := range 5 {
		name := fmt.Sprintf("checker-%d", i)
		members = append(members, healthcheck.Checker{Name: name, Domain: name, PerEndpoint: 3})
		names = append(names, name)
	}
	fleet := healthcheck.NewFleet(members)
	var on, off []string
	for i := range members {
		if fleet.Probes(names[i], "shop/web/c2") {
			on = append(on, names[i])
		} else {
			off = append(off, names[i])
		}
	}
	votes = Votes{checkers: 5, fleet: fleet, names: names, down: map[string][]string{"shop/web/c2": {on[0], off[0], off[1]}}}
	if got, want := votes.Describe("shop/web/c2", verdicts, "c2"), "out (1/3 down: "+on[0]+")"; got != want {
		t.Errorf("in a fleet: describe = %q, want %q", got, want)
	}
}
