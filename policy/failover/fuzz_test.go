package failover

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzDecide feeds arbitrary orders, pins, cluster health and previous
// states to Decide: it never panics; a place serves whenever one of the
// order (or the pin) is up, and it is then the pin or a place of the order
// that is up; the serving clusters are that place's; a failback pending
// keeps an active place that is up and waits no longer than the hold; and
// the state it leaves reads back the same.
func FuzzDecide(f *testing.F) {
	f.Add("europe-west1,us-east1", "", uint8(0b111), uint8(0b111), "us-east1", int64(10), int64(30))
	f.Add("europe-west1,us-east1", "us-east1", uint8(0b011), uint8(0b111), "europe-west1", int64(0), int64(0))
	f.Add("cluster-2,us-east1-b,europe-west1", "", uint8(0b100), uint8(0b101), "cluster-2", int64(100), int64(5))
	f.Fuzz(func(t *testing.T, order, pin string, healthy, weighted uint8, prevActive string, elapsed, holdSecs int64) {
		clusters := []Cluster{
			{Name: "cluster-1", Region: "us-east1", Zones: []string{"us-east1-b"}},
			{Name: "cluster-2", Region: "us-east1", Zones: []string{"us-east1-c"}},
			{Name: "cluster-3", Region: "europe-west1", Zones: []string{"europe-west1-b"}},
		}
		for i := range clusters {
			clusters[i].Healthy = healthy&(1<<i) != 0
			if weighted&(1<<i) != 0 {
				clusters[i].Weight = 1
			}
		}
		p := Policy{Order: strings.Split(order, ","), Pin: pin, Hold: time.Duration(holdSecs%3600) * time.Second}
		if p.Hold < 0 {
			p.Hold = -p.Hold
		}
		t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		prev := State{Active: prevActive, Since: t0, Candidate: "europe-west1", CandidateSince: t0}
		now := t0.Add(time.Duration(elapsed%86400) * time.Second)
		d := Decide(p, clusters, prev, now)
		up := func(place string) bool {
			return slices.ContainsFunc(clusters, func(c Cluster) bool { return c.In(place) && c.Healthy && c.Weight > 0 })
		}
		anyUp := slices.ContainsFunc(p.Order, up) || (pin != "" && up(pin))
		if anyUp != (d.State.Active != "") {
			t.Fatalf("a place is up: %v, but Decide serves %q (%s)", anyUp, d.State.Active, d.Message)
		}
		if d.State.Active == "" {
			return
		}
		if d.State.Active != pin && !slices.Contains(p.Order, d.State.Active) {
			t.Fatalf("serves %q, neither the pin %q nor in the order %v", d.State.Active, pin, p.Order)
		}
		if !up(d.State.Active) {
			t.Fatalf("serves %q, which is down", d.State.Active)
		}
		for _, name := range d.Clusters {
			i := slices.IndexFunc(clusters, func(c Cluster) bool { return c.Name == name })
			if i < 0 || !clusters[i].In(d.State.Active) {
				t.Fatalf("cluster %s serves, not in %s", name, d.State.Active)
			}
		}
		if d.Reason == ReasonFailbackPending && (d.State.Active != prev.Active || d.Due <= 0 || d.Due > p.Hold) {
			t.Fatalf("a pending failback serves %q (was %q) due %v with hold %v", d.State.Active, prev.Active, d.Due, p.Hold)
		}
		if back, err := ParseState(d.State.Encode()); err != nil || !back.Since.Equal(d.State.Since) || back.Active != d.State.Active {
			t.Fatalf("state %+v reads back as %+v, %v", d.State, back, err)
		}
	})
}
