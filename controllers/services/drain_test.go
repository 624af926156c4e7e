package services

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/failover"
)

// A drained cluster (kfed drain) leaves every name of a Service while
// another cluster can answer; a Service that lives only there keeps it and
// says so; failover counts a drained place unavailable.
func TestDecideDrainedCluster(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	usFirst := failover.Policy{Order: []string{"us-east1", "europe-west1"}, Hold: 30 * time.Second}
	tests := []struct {
		name    string
		drained []string
		placed  []dnsendpoint.Cluster
		policy  *failover.Policy
		global  []string // clusters at the global name
		own     []string // clusters at their own names
		cond    string   // kfedv1alpha1.ConditionDrained "Status/Reason", "" for none
	}{
		{name: "nothing drained: no condition", placed: []dnsendpoint.Cluster{east1, east2, eu},
			global: []string{"c1", "c2", "c3"}, own: []string{"c1", "c2", "c3"}},
		{name: "a drained cluster leaves the global name and its own", drained: []string{"c1"}, placed: []dnsendpoint.Cluster{east1, east2, eu},
			global: []string{"c2", "c3"}, own: []string{"c2", "c3"}, cond: "True/DrainedClustersOut"},
		{name: "a Service only in the drained cluster keeps it and says so", drained: []string{"c1"}, placed: []dnsendpoint.Cluster{east1},
			global: []string{"c1"}, own: []string{"c1"}, cond: "False/OnlyDrainedClusters"},
		{name: "failover: the first place serves without its drained cluster", drained: []string{"c1"}, placed: []dnsendpoint.Cluster{east1, east2, eu},
			policy: &usFirst, global: []string{"c2"}, own: []string{"c2", "c3"}, cond: "True/DrainedClustersOut"},
		{name: "failover: a place whose clusters are all drained is unavailable", drained: []string{"c1", "c2"}, placed: []dnsendpoint.Cluster{east1, east2, eu},
			policy: &usFirst, global: []string{"c3"}, own: []string{"c3"}, cond: "True/DrainedClustersOut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation{
				key:    types.NamespacedName{Namespace: "ns", Name: "web"},
				names:  publish.NewNames("fed", "example.com", "ns", "web"),
				cfg:    serviceconfig.Config{TTL: publish.DefaultTTL},
				joined: joinedClusters(east1, east2, eu), placed: map[string]bool{},
				members: map[string]memberCopy{}, now: t0,
			}
			if tt.policy != nil {
				obs.cfg.Routing, obs.cfg.Failover = serviceconfig.RoutingFailover, *tt.policy
			}
			for _, name := range tt.drained {
				obs.joined[name].Spec.Drained = true
			}
			for _, s := range tt.placed {
				obs.placed[s.Name] = true
				obs.members[s.Name] = memberCopy{outcome: publish.Serving, row: s}
			}
			d, err := decide(obs)
			if err != nil {
				t.Fatal(err)
			}
			var global, own []string
			for _, l := range render(t, d.endpoints, d.clusters) {
				f := strings.Fields(l)
				switch {
				case strings.HasPrefix(l, "web.ns.fed.svc.example.com A ["):
					global = append(global, strings.Trim(f[2], "[]"))
				case f[1] == "A" && strings.HasSuffix(f[0], ".web.ns.fed.svc.example.com"):
					own = append(own, strings.Trim(f[2], "[]"))
				}
			}
			if !slices.Equal(global, tt.global) || !slices.Equal(own, tt.own) {
				t.Errorf("global name %v, own names %v; want %v, %v", global, own, tt.global, tt.own)
			}
			for _, c := range d.clusters {
				if c.Drained != slices.Contains(tt.drained, c.Name) {
					t.Errorf("cluster table row %s drained %v", c.Name, c.Drained)
				}
			}
			svc := testService()
			d.status.apply(svc)
			got := ""
			if c := meta.FindStatusCondition(svc.Status.Conditions, kfedv1alpha1.ConditionDrained); c != nil {
				got = string(c.Status) + "/" + c.Reason
				if !strings.Contains(c.Message, tt.drained[0]) {
					t.Errorf("%s says %q, not naming %s", kfedv1alpha1.ConditionDrained, c.Message, tt.drained[0])
				}
			}
			if got != tt.cond {
				t.Errorf("%s = %q, want %q", kfedv1alpha1.ConditionDrained, got, tt.cond)
			}
		})
	}
}
