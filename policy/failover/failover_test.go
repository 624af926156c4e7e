package failover

import (
	"slices"
	"testing"
	"time"
)

// The test bed's clusters: two in us-east1, one in europe-west1.
func bed(healthy map[string]bool, weight map[string]int) []Cluster {
	cs := []Cluster{
		{Name: "cluster-1", Region: "us-east1", Zones: []string{"us-east1-b"}},
		{Name: "cluster-2", Region: "us-east1", Zones: []string{"us-east1-c"}},
		{Name: "cluster-3", Region: "europe-west1", Zones: []string{"europe-west1-b"}},
	}
	for i := range cs {
		cs[i].Healthy = true
		if h, ok := healthy[cs[i].Name]; ok {
			cs[i].Healthy = h
		}
		cs[i].Weight = 1
		if w, ok := weight[cs[i].Name]; ok {
			cs[i].Weight = w
		}
	}
	return cs
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	order := Policy{Order: []string{"europe-west1", "us-east1"}, Hold: 30 * time.Second}
	down3 := map[string]bool{"cluster-3": false}
	tests := []struct {
		name     string
		policy   Policy
		clusters []Cluster
		prev     State
		now      time.Time
		active   string
		serving  []string
		reason   string
		due      time.Duration
		since    time.Time
	}{
		{"the first place serves from the first decision", order, bed(nil, nil), State{}, t0,
			"europe-west1", []string{"cluster-3"}, ReasonPrimary, 0, t0},
		{"a place of the order can be a cluster or a zone", Policy{Order: []string{"us-east1-c", "cluster-3"}}, bed(nil, nil), State{}, t0,
			"us-east1-c", []string{"cluster-2"}, ReasonPrimary, 0, t0},
		{"the first place down: the next serves at once", order, bed(down3, nil),
			State{Active: "europe-west1", Since: t0}, t0.Add(time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailedOver, 0, t0.Add(time.Minute)},
		{"no ready replicas is down too", order, bed(nil, map[string]int{"cluster-3": 0}),
			State{Active: "europe-west1", Since: t0}, t0.Add(time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailedOver, 0, t0.Add(time.Minute)},
		{"one healthy cluster keeps a place up", order, bed(map[string]bool{"cluster-1": false}, nil),
			State{Active: "us-east1", Since: t0}, t0.Add(time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailbackPending, 30 * time.Second, t0},
		{"the primary back: failback waits for the hold", order, bed(nil, nil),
			State{Active: "us-east1", Since: t0}, t0.Add(time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailbackPending, 30 * time.Second, t0},
		{"still within the hold", order, bed(nil, nil),
			State{Active: "us-east1", Since: t0, Candidate: "europe-west1", CandidateSince: t0.Add(time.Minute)}, t0.Add(time.Minute + 20*time.Second),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailbackPending, 10 * time.Second, t0},
		{"after the hold traffic returns", order, bed(nil, nil),
			State{Active: "us-east1", Since: t0, Candidate: "europe-west1", CandidateSince: t0.Add(time.Minute)}, t0.Add(time.Minute + 30*time.Second),
			"europe-west1", []string{"cluster-3"}, ReasonPrimary, 0, t0.Add(time.Minute + 30*time.Second)},
		{"a candidate time ahead of the clock (another replica's) starts the hold now", order, bed(nil, nil),
			State{Active: "us-east1", Since: t0, Candidate: "europe-west1", CandidateSince: t0.Add(time.Hour)}, t0.Add(time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailbackPending, 30 * time.Second, t0},
		{"a primary that flaps restarts the hold", order, bed(nil, nil),
			State{Active: "us-east1", Since: t0}, t0.Add(2 * time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailbackPending, 30 * time.Second, t0},
		{"pinned to a later place", Policy{Order: order.Order, Pin: "us-east1", Hold: order.Hold}, bed(nil, nil),
			State{Active: "europe-west1", Since: t0}, t0.Add(time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonPinned, 0, t0.Add(time.Minute)},
		{"a pinned place that is down: the order decides", Policy{Order: order.Order, Pin: "us-east1", Hold: order.Hold},
			bed(map[string]bool{"cluster-1": false, "cluster-2": false}, nil),
			State{Active: "us-east1", Since: t0}, t0.Add(time.Minute),
			"europe-west1", []string{"cluster-3"}, ReasonPinnedPlaceDown, 0, t0.Add(time.Minute)},
		{"released from a pin, back to the primary after the hold", order, bed(nil, nil),
			State{Active: "us-east1", Since: t0}, t0.Add(time.Minute),
			"us-east1", []string{"cluster-1", "cluster-2"}, ReasonFailbackPending, 30 * time.Second, t0},
		{"released from a pin outside the order: the order at once", order, bed(nil, nil),
			State{Active: "cluster-2", Since: t0}, t0.Add(time.Minute),
			"europe-west1", []string{"cluster-3"}, ReasonPrimary, 0, t0.Add(time.Minute)},
		{"nothing up: every cluster serves", order, bed(map[string]bool{"cluster-1": false, "cluster-2": false, "cluster-3": false}, nil),
			State{Active: "europe-west1", Since: t0}, t0.Add(time.Minute),
			"", nil, ReasonNoPlaceUp, 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.policy, tt.clusters, tt.prev, tt.now)
			if d.State.Active != tt.active || !slices.Equal(d.Clusters, tt.serving) || d.Reason != tt.reason || d.Due != tt.due {
				t.Errorf("Decide = active %q, clusters %v, %s, due %v (%s); want %q, %v, %s, due %v",
					d.State.Active, d.Clusters, d.Reason, d.Due, d.Message, tt.active, tt.serving, tt.reason, tt.due)
			}
			if !d.State.Since.Equal(tt.since) {
				t.Errorf("active since %v, want %v", d.State.Since, tt.since)
			}
			if d.Message == "" {
				t.Error("no message")
			}
		})
	}
}

func TestStateRoundTrips(t *testing.T) {
	in := State{Active: "us-east1", Since: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), Candidate: "europe-west1",
		CandidateSince: time.Date(2026, 11, 25, 12, 1, 0, 0, time.UTC)}
	out, err := ParseState(in.Encode())
	if err != nil || out != in {
		t.Errorf("%+v read back as %+v, %v", in, out, err)
	}
	if z, err := ParseState(""); err != nil || z != (State{}) {
		t.Errorf("empty state read as %+v, %v", z, err)
	}
	if _, err := ParseState("{"); err == nil {
		t.Error("a broken state reads")
	}
}

func TestSwitched(t *testing.T) {
	prev := State{Active: "europe-west1"}
	tests := []struct {
		name string
		d    Decision
		prev State
		want bool
	}{
		{"same place", Decision{State: State{Active: "europe-west1"}}, prev, false},
		{"another place", Decision{State: State{Active: "us-east1"}}, prev, true},
		{"to every cluster", Decision{}, prev, true},
		{"the first decision", Decision{State: State{Active: "us-east1"}}, State{}, false},
	}
	for _, tt := range tests {
		if got := tt.d.Switched(tt.prev); got != tt.want {
			t.Errorf("%s: Switched = %v, want %v", tt.name, got, tt.want)
		}
	}
}
