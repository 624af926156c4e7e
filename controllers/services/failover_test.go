package services

import (
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/policy/failover"
)

// A Service routed by failover publishes, at every shared name, only the
// clusters of the place that serves; each cluster keeps its own name; the
// state of the decision is kept with the records, and the Service says which
// place serves and why.
func TestDecideFailover(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sick := eu
	sick.Unhealthy = true
	policy := failover.Policy{Order: []string{"europe-west1", "us-east1"}, Hold: 30 * time.Second}
	withState := func(st failover.State, shards ...dnsendpoint.Cluster) func(*testing.T) observation {
		return func(t *testing.T) observation {
			p := publishedWith(t, shards...)
			if st != (failover.State{}) {
				p.Annotations[dnsendpoint.AnnotationFailover] = st.Encode()
			}
			return observation{published: p}
		}
	}
	tests := []struct {
		name      string
		policy    failover.Policy
		published func(*testing.T) observation
		serving   []dnsendpoint.Cluster
		global    []string // clusters at the global name
		region    string   // what the us-east1 region name holds: "A" or "CNAME"
		active    string
		cond      string // kfedv1alpha1.ConditionFailover "Status/Reason"
		due       bool
	}{
		{name: "the first place serves: the others leave every shared name",
			policy: policy, published: withState(failover.State{}, east1, east2, eu), serving: []dnsendpoint.Cluster{east1, east2, eu},
			global: []string{"c3"}, region: "CNAME", active: "europe-west1", cond: "True/Primary"},
		{name: "the first place unhealthy: the next serves",
			policy: policy, published: withState(failover.State{Active: "europe-west1", Since: t0}, east1, east2, sick), serving: []dnsendpoint.Cluster{east1, east2, sick},
			global: []string{"c1", "c2"}, region: "A", active: "us-east1", cond: "True/FailedOver"},
		{name: "the first place healthy again: failback waits for the hold",
			policy: policy, published: withState(failover.State{Active: "us-east1", Since: t0}, east1, east2, eu), serving: []dnsendpoint.Cluster{east1, east2, eu},
			global: []string{"c1", "c2"}, region: "A", active: "us-east1", cond: "True/FailbackPending", due: true},
		{name: "pinned",
			policy: failover.Policy{Order: policy.Order, Pin: "us-east1", Hold: policy.Hold}, published: withState(failover.State{Active: "europe-west1", Since: t0}, east1, east2, eu),
			serving: []dnsendpoint.Cluster{east1, east2, eu}, global: []string{"c1", "c2"}, region: "A", active: "us-east1", cond: "True/Pinned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := tt.published(t)
			obs.key, obs.names = types.NamespacedName{Namespace: "ns", Name: "web"}, publish.NewNames("fed", "example.com", "ns", "web")
			obs.cfg = serviceconfig.Config{TTL: publish.DefaultTTL, Routing: serviceconfig.RoutingFailover, Failover: tt.policy}
			obs.joined, obs.placed = joinedClusters(east1, east2, eu), map[string]bool{"c1": true, "c2": true, "c3": true}
			obs.members = map[string]memberCopy{}
			for _, s := range tt.serving {
				obs.members[s.Name] = memberCopy{outcome: publish.Serving, row: s}
			}
			obs.now = t0.Add(time.Minute)
			d, err := decide(obs)
			st := d.status
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, d.endpoints, d.clusters)
			var global []string
			region := ""
			for _, l := range got {
				if strings.HasPrefix(l, "web.ns.fed.svc.example.com A [") {
					global = append(global, strings.TrimSuffix(strings.Fields(l)[2], "]")[1:])
				}
				if strings.HasPrefix(l, "web.ns.fed.svc.us-east1.example.com ") && region == "" {
					region = strings.Fields(l)[1]
				}
			}
			if !slices.Equal(global, tt.global) || region != tt.region {
				t.Errorf("global name %v, us-east1 %s; want %v, %s\n  %s", global, region, tt.global, tt.region, strings.Join(got, "\n  "))
			}
			for _, c := range []string{"c1", "c2", "c3"} {
				if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, c+".web.ns.fed.svc.example.com ") }) {
					t.Errorf("%s lost its own name", c)
				}
			}
			state, err := failover.ParseState(d.failover)
			if err != nil || state.Active != tt.active {
				t.Errorf("kept state %q (%v), want active %s", d.failover, err, tt.active)
			}
			if (d.next > 0) != tt.due {
				t.Errorf("due %v, want one: %v", d.next, tt.due)
			}
			svc := testService()
			st.apply(svc)
			c := meta.FindStatusCondition(svc.Status.Conditions, kfedv1alpha1.ConditionFailover)
			if c == nil || string(c.Status)+"/"+c.Reason != tt.cond || !strings.Contains(c.Message, tt.active) {
				t.Errorf("%s = %+v, want %s naming %s", kfedv1alpha1.ConditionFailover, c, tt.cond, tt.active)
			}
		})
	}
}

func TestDecideWithoutFailoverHasNoCondition(t *testing.T) {
	obs := observation{
		key: types.NamespacedName{Namespace: "ns", Name: "web"}, names: publish.NewNames("fed", "example.com", "ns", "web"),
		cfg: serviceconfig.Config{TTL: publish.DefaultTTL}, joined: joinedClusters(east1, eu), placed: map[string]bool{"c1": true, "c3": true},
		members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c3": {outcome: publish.Serving, row: eu}},
	}
	d, err := decide(obs)
	st := d.status
	if err != nil || d.failover != "" {
		t.Fatalf("decide = state %q, %v", d.failover, err)
	}
	svc := testService()
	st.apply(svc)
	if meta.FindStatusCondition(svc.Status.Conditions, kfedv1alpha1.ConditionFailover) != nil {
		t.Error("a weighted Service has a failover condition")
	}
}
