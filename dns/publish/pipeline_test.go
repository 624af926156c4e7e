package publish

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/failover"
)

// TestDecide follows one federated object through the whole recipe: what
// each member gave, what was published before, the Clusters, the checkers
// and the routing, to the records a resolver would see and when to look
// again.
func TestDecide(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	names := NewNames("fed", "example.com", "ns", "web")
	cluster := func(name, region string) *kfedv1alpha1.Cluster {
		return &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kfedv1alpha1.ClusterSpec{Region: region}}
	}
	joined := func(mutate ...func(map[string]*kfedv1alpha1.Cluster)) map[string]*kfedv1alpha1.Cluster {
		out := map[string]*kfedv1alpha1.Cluster{"c1": cluster("c1", "us-east1"), "c2": cluster("c2", "us-east1"), "c3": cluster("c3", "europe-west1")}
		for _, m := range mutate {
			m(out)
		}
		return out
	}
	drainC1 := func(j map[string]*kfedv1alpha1.Cluster) { j["c1"].Spec.Drained = true }
	withdrawC2 := func(j map[string]*kfedv1alpha1.Cluster) {
		j["c2"].Status.Conditions = []metav1.Condition{{Type: kfedv1alpha1.ClusterReady, Status: metav1.ConditionFalse, Reason: kfedv1alpha1.ReasonControlPlaneUnhealthy}}
	}
	serving := func(name, addr string) Member {
		return Member{Outcome: Serving, Row: dnsendpoint.Cluster{Name: name, Addresses: ips(addr), Weight: 1}}
	}
	offline := func(name string) Member { return Member{Outcome: Offline, Row: dnsendpoint.Cluster{Name: name}} }
	three := []Member{serving("c1", "127.1.0.1"), serving("c2", "127.2.0.1"), serving("c3", "127.3.0.1")}
	published := func(rows ...dnsendpoint.Cluster) *extdnsv1alpha1.DNSEndpoint {
		ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		dnsendpoint.SetClusters(ep, rows)
		return ep
	}
	had := published(dnsendpoint.Cluster{Name: "c2", Addresses: ips("127.2.0.9"), Weight: 1})
	down := func(clusters ...string) Health {
		c := Checker{Name: "kfed-system/k1", Unhealthy: map[string]string{}}
		for _, cl := range clusters {
			c.Unhealthy[kfedv1alpha1.EndpointKey(key.Namespace, key.Name, cl)] = "connection refused"
		}
		return NewHealth([]Checker{c}, 30*time.Second)
	}
	policy := &failover.Policy{Order: []string{"europe-west1", "us-east1"}}
	// loaded is checkers each publishing the figures of one map.
	loaded := func(figures ...map[string]float64) Health {
		var cs []Checker
		for i, f := range figures {
			c := Checker{Name: "kfed-system/k" + strconv.Itoa(i), Unhealthy: map[string]string{}, Loads: map[string]float64{}}
			for cl, u := range f {
				c.Loads[kfedv1alpha1.EndpointKey(key.Namespace, key.Name, cl)] = u
			}
			cs = append(cs, c)
		}
		return NewHealth(cs, 30*time.Second)
	}

	tests := []struct {
		name     string
		obj      Object
		global   string // the global name's addresses, sorted, comma-separated
		rows     string // the rows Decide kept: "name:weight" and a "!" when found down
		next     time.Duration
		verdicts int
	}{
		{name: "every serving member answers the global name",
			obj: Object{Members: three}, global: "127.1.0.1,127.2.0.1,127.3.0.1", rows: "c1:1 c2:1 c3:1"},
		{name: "a member not Ready keeps the row it had",
			obj:    Object{Members: []Member{serving("c1", "127.1.0.1"), offline("c2")}, Published: had},
			global: "127.1.0.1,127.2.0.9", rows: "c1:1 c2:1"},
		{name: "a member its inventory withdrew keeps nothing",
			obj:    Object{Members: []Member{serving("c1", "127.1.0.1"), offline("c2")}, Published: had, Joined: joined(withdrawC2)},
			global: "127.1.0.1", rows: "c1:1"},
		{name: "a write that failed keeps the row it had",
			obj:    Object{Members: []Member{serving("c1", "127.1.0.1"), {Outcome: WriteFailed, Row: dnsendpoint.Cluster{Name: "c2"}}}, Published: had},
			global: "127.1.0.1,127.2.0.9", rows: "c1:1 c2:1"},
		{name: "weights are the replicas' and follow the rows",
			obj:    Object{Members: three, Weights: Weights{"c1": 4, "c3": 2}},
			global: "127.1.0.1,127.2.0.1,127.3.0.1", rows: "c1:4 c2:0 c3:2"},
		{name: "a drained cluster leaves while another answers",
			obj:    Object{Members: three, Joined: joined(drainC1)},
			global: "127.2.0.1,127.3.0.1", rows: "c1:1 c2:1 c3:1"},
		{name: "a cluster the quorum finds down leaves, and is looked at again when a heartbeat may go stale",
			obj:    Object{Members: three, Health: down("c2")},
			global: "127.1.0.1,127.3.0.1", rows: "c1:1 c2:1! c3:1", next: 30 * time.Second, verdicts: 3},
		{name: "every cluster down: the global name keeps them all",
			obj:    Object{Members: three, Health: down("c1", "c2", "c3")},
			global: "127.1.0.1,127.2.0.1,127.3.0.1", rows: "c1:1! c2:1! c3:1!", next: 30 * time.Second, verdicts: 3},
		{name: "a failover order serves its first place up",
			obj:    Object{Members: three, Failover: policy},
			global: "127.3.0.1", rows: "c1:1 c2:1 c3:1"},
		{name: "a failover order passes over a place found down",
			obj:    Object{Members: three, Failover: policy, Health: down("c3")},
			global: "127.1.0.1,127.2.0.1", rows: "c1:1 c2:1 c3:1!", next: 30 * time.Second, verdicts: 3},
		{name: "loads weigh the clusters by their headroom",
			obj:    Object{Members: three, Health: loaded(map[string]float64{"c1": 0.975, "c2": 0.325, "c3": 0.325})},
			global: "127.1.0.1,127.2.0.1,127.3.0.1", rows: "c1:3 c2:68 c3:68", verdicts: 3},
		{name: "a cluster at its target leaves the shared names",
			obj:    Object{Members: three, Health: loaded(map[string]float64{"c1": 1.025, "c2": 0.325})},
			global: "127.2.0.1,127.3.0.1", rows: "c1:0~ c2:68 c3:34", verdicts: 3}, // c3 without a figure: the mean headroom
		{name: "every cluster at its target: capacities, none leaves",
			obj:    Object{Members: three, Health: loaded(map[string]float64{"c1": 1.2, "c2": 1.5, "c3": 1.025})},
			global: "127.1.0.1,127.2.0.1,127.3.0.1", rows: "c1:1 c2:1 c3:1", verdicts: 3},
		{name: "one checker alone does not shed another member's endpoint: the panel's median counts",
			obj:    Object{Members: three, Health: loaded(map[string]float64{"c1": 1.5}, map[string]float64{"c1": 0.325}, map[string]float64{"c1": 0.325})},
			global: "127.1.0.1,127.2.0.1,127.3.0.1", rows: "c1:68 c2:68 c3:68", verdicts: 3},
		{name: "load weighs within the place a failover order serves",
			obj:    Object{Members: three, Failover: policy, Health: loaded(map[string]float64{"c3": 1.2, "c1": 0.1})},
			global: "127.3.0.1", rows: "c1:1 c2:1 c3:1", verdicts: 3},
		{name: "a load balancer's hostname is resolved again every resync",
			obj: Object{Members: []Member{{Outcome: Serving, Row: dnsendpoint.Cluster{Name: "c1", Hostname: "lb.example.net", Addresses: ips("127.1.0.7"), Weight: 1}}},
				Resync: 5 * time.Minute},
			global: "CNAME lb.example.net", rows: "c1:1", next: 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.obj
			o.Key, o.Names, o.TTL, o.Now = key, names, 30, time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
			if o.Joined == nil {
				o.Joined = joined()
			}
			d, err := Decide(o)
			if err != nil {
				t.Fatal(err)
			}
			if got := globalOf(d.Endpoints, names.Global()); got != tt.global {
				t.Errorf("global name answers %s, want %s", got, tt.global)
			}
			if got := rowsOf(d.Rows); got != tt.rows {
				t.Errorf("rows %s, want %s", got, tt.rows)
			}
			if d.Next != tt.next {
				t.Errorf("next look in %v, want %v", d.Next, tt.next)
			}
			if len(d.Verdicts) != tt.verdicts {
				t.Errorf("%d verdicts, want %d", len(d.Verdicts), tt.verdicts)
			}
			if len(d.Clusters) != len(d.Rows) {
				t.Errorf("a table of %d rows for %d clusters", len(d.Clusters), len(d.Rows))
			}
		})
	}
}

// TestDecideOwnNames: a Gateway's or Ingress's hostnames answer the live
// clusters' addresses, the healthy ones while any is, never a CNAME; a
// cluster without an address has no row.
func TestDecideOwnNames(t *testing.T) {
	key := types.NamespacedName{Namespace: "kfed-system", Name: "gateway.shop.web"}
	members := []Member{
		{Outcome: Serving, Row: dnsendpoint.Cluster{Name: "c1", Hostname: "nlb.example.net", Addresses: ips("127.1.0.1")}},
		{Outcome: Serving, Row: dnsendpoint.Cluster{Name: "c2", Addresses: ips("127.2.0.1", "::1")}},
		{Outcome: Unresolved, Row: dnsendpoint.Cluster{Name: "c3", Hostname: "never.example.net"}},
	}
	down := NewHealth([]Checker{{Name: "k", Unhealthy: map[string]string{kfedv1alpha1.EndpointKey(key.Namespace, key.Name, "c2"): "timeout"}}}, 0)
	tests := []struct {
		name    string
		health  Health
		names   []string
		records []string
	}{
		{"both hostnames at every live address", Health{}, []string{"shop.example.com", "example.com"},
			[]string{"example.com A 127.1.0.1,127.2.0.1", "example.com AAAA ::1", "shop.example.com A 127.1.0.1,127.2.0.1", "shop.example.com AAAA ::1"}},
		{"a cluster found down leaves", down, []string{"shop.example.com"}, []string{"shop.example.com A 127.1.0.1"}},
		{"no hostname: nothing to publish", Health{}, []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(Object{Key: key, OwnNames: true, Hostnames: tt.names, TTL: 30, Members: members, Health: tt.health})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range d.Endpoints {
				got = append(got, e.DNSName+" "+e.RecordType+" "+strings.Join(e.Targets, ","))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.records) {
				t.Errorf("records %q, want %q", got, tt.records)
			}
			if rows := rowsOf(d.Rows); rows != "c1:1 c2:1" && rows != "c1:1 c2:1!" {
				t.Errorf("rows %s, want c1 and c2 only", rows)
			}
		})
	}
}

// globalOf is what name answers: its addresses, or "CNAME target".
func globalOf(eps []extdnsv1alpha1.Endpoint, name string) string {
	var addrs []string
	for _, e := range eps {
		switch {
		case e.DNSName != name:
		case e.RecordType == "CNAME":
			return "CNAME " + strings.Join(e.Targets, ",")
		case e.RecordType == "A" || e.RecordType == "AAAA":
			addrs = append(addrs, e.Targets...)
		}
	}
	slices.Sort(addrs)
	return strings.Join(addrs, ",")
}

func rowsOf(rows []dnsendpoint.Cluster) string {
	var out []string
	for _, r := range rows {
		s := r.Name + ":" + strconv.Itoa(r.Weight)
		if r.Unhealthy {
			s += "!"
		}
		if r.Shed {
			s += "~"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestDecideNameTooLongStillTells: a name DNS cannot hold publishes
// nothing, and the rows, verdicts and failover decision still reach the
// status.
func TestDecideNameTooLongStillTells(t *testing.T) {
	long := strings.Repeat("n", 63)
	names := NewNames(long, long+".example.com", long, long)
	rows := []Member{{Outcome: Serving, Row: dnsendpoint.Cluster{Name: "c1", Region: "us-east1", Addresses: ips("127.1.0.1"), Weight: 1}}}
	d, err := Decide(Object{Names: names, TTL: 30, Members: rows, Failover: &failover.Policy{Order: []string{"us-east1"}}})
	if err == nil {
		t.Fatal("a name over 253 octets was published")
	}
	if d.Endpoints != nil || d.Clusters != nil || len(d.Rows) != 1 || d.Failover == nil {
		t.Errorf("decision %+v: want no records, the row and the failover decision", d)
	}
}
