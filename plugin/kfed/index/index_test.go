package index

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
	"weak"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/test/oldlayout"
)

const global = "demo.default.dev.svc.kfed.test"

// shard is the A endpoint of one cluster at name, as the services controller
// writes it.
func shard(name, cluster string, weight int, targets []string, clusterIPs ...string) extdnsv1alpha1.Endpoint {
	props := []extdnsv1alpha1.ProviderSpecificProperty{
		{Name: "kfed.io/cluster", Value: cluster},
		{Name: "kfed.io/region", Value: "us-east1"},
		{Name: "kfed.io/weight", Value: fmt.Sprint(weight)},
	}
	if len(clusterIPs) > 0 {
		props = append(props, extdnsv1alpha1.ProviderSpecificProperty{Name: "kfed.io/cluster-ip", Value: strings.Join(clusterIPs, ",")})
	}
	typ := "A"
	if strings.Contains(targets[0], ":") {
		typ = "AAAA"
	}
	return extdnsv1alpha1.Endpoint{
		DNSName: name, RecordType: typ, Targets: targets, SetIdentifier: cluster,
		RecordTTL: 30, ProviderSpecific: props,
	}
}

func shared(name, typ string, ttl int64, targets ...string) extdnsv1alpha1.Endpoint {
	return extdnsv1alpha1.Endpoint{DNSName: name, RecordType: typ, Targets: targets, RecordTTL: ttl}
}

// strs renders records as their text, for comparison.
func strs(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = rr.String()
	}
	return out
}

// first returns a fixed intn that always draws the first group left.
func first(int) int { return 0 }

func TestLookupTellsRecordsFromEmptyNonTerminalsFromAbsentNames(t *testing.T) {
	x := New("", 30)
	if err := x.Set("default/demo", []extdnsv1alpha1.Endpoint{shard(global, "cluster-1", 1, []string{"127.1.0.1"})}, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		qname       string
		wantExists  bool
		wantRecords bool
	}{
		{"name with records exists", global + ".", true, true},
		{"upper-case form is not the index's form", strings.ToUpper(global) + ".", false, false},
		{"parent of a name is an empty non-terminal", "default.dev.svc.kfed.test.", true, false},
		{"zone apex is an empty non-terminal", "kfed.test.", true, false},
		{"sibling does not exist", "other.dev.svc.kfed.test.", false, false},
		{"name below a name does not exist", "x." + global + ".", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, exists := x.Lookup(tt.qname)
			if exists != tt.wantExists || (r != nil) != tt.wantRecords {
				t.Errorf("Lookup(%q) = records %v, exists %v; want records %v, exists %v",
					tt.qname, r != nil, exists, tt.wantRecords, tt.wantExists)
			}
		})
	}
}

func TestAppendAddressesOrdersLocalClusterFirst(t *testing.T) {
	eps := []extdnsv1alpha1.Endpoint{
		shard(global, "cluster-1", 1, []string{"127.1.0.1"}, "10.96.0.10"),
		shard(global, "cluster-2", 1, []string{"127.2.0.1"}, "10.96.0.20"),
		shard(global, "cluster-3", 0, []string{"127.3.0.1"}),
		shard(global, "cluster-4", 5, []string{"127.4.0.1", "127.4.0.2"}),
		shard(global, "cluster-1", 1, []string{"fd00::1"}, "fd96::10"),
	}
	tests := []struct {
		name    string
		cluster string
		qtype   uint16
		eps     []extdnsv1alpha1.Endpoint
		want    []string
	}{
		{
			name: "outside any cluster the weighted clusters come first and weight 0 last", qtype: dns.TypeA, eps: eps,
			want: []string{"127.1.0.1", "127.2.0.1", "127.4.0.1", "127.4.0.2", "127.3.0.1"},
		},
		{
			name: "inside a cluster its cluster IP comes first, not its load balancer", cluster: "cluster-2", qtype: dns.TypeA, eps: eps,
			want: []string{"10.96.0.20", "127.1.0.1", "127.4.0.1", "127.4.0.2", "127.3.0.1"},
		},
		{
			name: "inside a cluster without cluster IPs its own targets come first", cluster: "cluster-4", qtype: dns.TypeA, eps: eps,
			want: []string{"127.4.0.1", "127.4.0.2", "127.1.0.1", "127.2.0.1", "127.3.0.1"},
		},
		{
			name: "inside a cluster of weight 0 its own targets come last", cluster: "cluster-3", qtype: dns.TypeA, eps: eps,
			want: []string{"127.1.0.1", "127.2.0.1", "127.4.0.1", "127.4.0.2", "127.3.0.1"},
		},
		{
			name: "inside a cluster with no endpoint at the name the order is the weighted one", cluster: "cluster-9", qtype: dns.TypeA, eps: eps,
			want: []string{"127.1.0.1", "127.2.0.1", "127.4.0.1", "127.4.0.2", "127.3.0.1"},
		},
		{
			name: "AAAA answers the cluster IPs of its own family", cluster: "cluster-1", qtype: dns.TypeAAAA, eps: eps,
			want: []string{"fd96::10"},
		},
		{
			name: "a shared endpoint without a cluster joins with weight 1", cluster: "cluster-1", qtype: dns.TypeA,
			eps:  []extdnsv1alpha1.Endpoint{shared(global, "A", 30, "192.0.2.1"), shard(global, "cluster-1", 1, []string{"127.1.0.1"})},
			want: []string{"127.1.0.1", "192.0.2.1"},
		},
	}
	for _, tt := range tests {
		for _, layout := range []string{"per-cluster endpoints", "cluster table"} {
			t.Run(tt.name+"/"+layout, func(t *testing.T) {
				eps, clusters := tt.eps, dnsendpoint.Clusters(nil)
				if layout == "cluster table" {
					eps, clusters = tableLayout(t, tt.eps)
				}
				x := New(tt.cluster, 30)
				if err := x.Set("default/demo", eps, clusters); err != nil {
					t.Fatal(err)
				}
				r, _ := x.Lookup(global + ".")
				var got []string
				for _, rr := range r.AppendAddresses(nil, tt.qtype, first) {
					switch rr := rr.(type) {
					case *dns.A:
						got = append(got, rr.A.String())
					case *dns.AAAA:
						got = append(got, rr.AAAA.String())
					}
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("addresses %v, want %v", got, tt.want)
				}
			})
		}
	}
}

// tableLayout rewrites endpoints of the older per-cluster layout (ADR 0002)
// as the services controller writes them now (ADR 0003).
func tableLayout(t *testing.T, perCluster []extdnsv1alpha1.Endpoint) ([]extdnsv1alpha1.Endpoint, dnsendpoint.Clusters) {
	t.Helper()
	obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: perCluster}}
	if err := oldlayout.Upgrade(obj); err != nil {
		t.Fatal(err)
	}
	clusters, err := dnsendpoint.ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	return obj.Spec.Endpoints, clusters
}

func TestAppendAddressesDrawsClustersInProportionToWeight(t *testing.T) {
	x := New("", 30)
	err := x.Set("default/demo", []extdnsv1alpha1.Endpoint{
		shard(global, "heavy", 3, []string{"127.1.0.1"}),
		shard(global, "light", 1, []string{"127.2.0.1"}),
		shard(global, "off", 0, []string{"127.3.0.1"}),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := x.Lookup(global + ".")
	rng := rand.New(rand.NewPCG(1, 2))
	const draws = 20000
	firstCount := map[string]int{}
	var buf []dns.RR
	for range draws {
		buf = r.AppendAddresses(buf[:0], dns.TypeA, rng.IntN)
		if len(buf) != 3 {
			t.Fatalf("got %d records, want 3", len(buf))
		}
		firstCount[buf[0].(*dns.A).A.String()]++
		if last := buf[2].(*dns.A).A.String(); last != "127.3.0.1" {
			t.Fatalf("weight-0 cluster answered at %s's place", last)
		}
	}
	if share := float64(firstCount["127.1.0.1"]) / draws; share < 0.73 || share > 0.77 {
		t.Errorf("weight 3 of 4 came first in %.3f of answers, want 0.75 ± 0.02", share)
	}
}

func TestSetMergesObjectsAndReplacesWhatAnObjectContributed(t *testing.T) {
	x := New("", 30)
	region := "demo.default.dev.svc.us-east1.kfed.test"
	mustSet(t, x, "default/demo", shard(global, "cluster-1", 1, []string{"127.1.0.1"}), shard(region, "cluster-1", 1, []string{"127.1.0.1"}))
	mustSet(t, x, "other/demo", shard(global, "cluster-2", 1, []string{"127.2.0.1"}))
	if got := addressesAt(x, global); !slices.Equal(got, []string{"127.1.0.1", "127.2.0.1"}) {
		t.Errorf("merged %v, want both objects' addresses", got)
	}
	if x.Len() != 2 {
		t.Errorf("Len %d, want 2", x.Len())
	}

	mustSet(t, x, "default/demo", shard(global, "cluster-1", 1, []string{"127.1.0.9"}))
	if got := addressesAt(x, global); !slices.Equal(got, []string{"127.1.0.9", "127.2.0.1"}) {
		t.Errorf("after update %v", got)
	}
	if _, exists := x.Lookup(region + "."); exists {
		t.Error("name an object no longer has still exists")
	}
	if _, exists := x.Lookup("svc.us-east1.kfed.test."); exists {
		t.Error("empty non-terminal above a removed name still exists")
	}

	x.Delete("other/demo")
	if got := addressesAt(x, global); !slices.Equal(got, []string{"127.1.0.9"}) {
		t.Errorf("after deleting one object %v", got)
	}
	x.Delete("default/demo")
	if _, exists := x.Lookup("kfed.test."); exists || x.Len() != 0 || len(x.names) != 0 {
		t.Errorf("index not empty after every object was deleted: %d names held", len(x.names))
	}
}

func TestSetServesValidTargetsAndReportsTheRest(t *testing.T) {
	x := New("", 30)
	err := x.Set("default/demo", []extdnsv1alpha1.Endpoint{
		shard(global, "cluster-1", 1, []string{"127.1.0.1", "not-an-ip", "fd00::1"}),
		shared("bad..name", "A", 30, "127.0.0.1"),
		shared("_http._tcp."+global, "SRV", 30, "0 1 80 cluster-1."+global, "eighty"),
		shared("mx."+global, "MX", 30, "10 mail.example."),
	}, nil)
	for _, want := range []string{`"not-an-ip"`, `"fd00::1"`, `"bad..name"`, `"eighty"`, "MX"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
	if got := addressesAt(x, global); !slices.Equal(got, []string{"127.1.0.1"}) {
		t.Errorf("valid target not served: %v", got)
	}
	r, _ := x.Lookup("_http._tcp." + global + ".")
	if r == nil || len(r.SRV()) != 1 {
		t.Errorf("valid SRV target not served")
	}
	if _, exists := x.Lookup("mx." + global + "."); exists {
		t.Error("a name with only unserved records exists")
	}
}

func TestRecordsFollowTheContract(t *testing.T) {
	tests := []struct {
		name    string
		eps     []extdnsv1alpha1.Endpoint
		get     func(*Records) []dns.RR
		want    []string
		wantErr string
	}{
		{
			name: "a record set takes the lowest TTL of its endpoints",
			eps:  []extdnsv1alpha1.Endpoint{shared(global, "A", 60, "192.0.2.1"), shared(global, "A", 20, "192.0.2.2")},
			get:  func(r *Records) []dns.RR { return r.AppendAddresses(nil, dns.TypeA, first) },
			want: []string{global + ".\t20\tIN\tA\t192.0.2.1", global + ".\t20\tIN\tA\t192.0.2.2"},
		},
		{
			name: "an endpoint without TTL gets the default",
			eps:  []extdnsv1alpha1.Endpoint{shared(global, "A", 0, "192.0.2.1")},
			get:  func(r *Records) []dns.RR { return r.AppendAddresses(nil, dns.TypeA, first) },
			want: []string{global + ".\t45\tIN\tA\t192.0.2.1"},
		},
		{
			name: "duplicate targets are answered once",
			eps:  []extdnsv1alpha1.Endpoint{shared(global, "A", 30, "192.0.2.1", "192.0.2.1")},
			get:  func(r *Records) []dns.RR { return r.AppendAddresses(nil, dns.TypeA, first) },
			want: []string{global + ".\t30\tIN\tA\t192.0.2.1"},
		},
		{
			name: "a CNAME hides other records at its name", wantErr: "beside its CNAME",
			eps: []extdnsv1alpha1.Endpoint{shared(global, "CNAME", 30, "Elb.Example.com"), shared(global, "A", 30, "192.0.2.1")},
			get: func(r *Records) []dns.RR {
				return append(r.AppendAddresses(nil, dns.TypeA, first), r.CNAME())
			},
			want: []string{global + ".\t30\tIN\tCNAME\telb.example.com."},
		},
		{
			name: "SRV targets read as priority weight port target",
			eps:  []extdnsv1alpha1.Endpoint{shared(global, "SRV", 30, "0 2 8080 cluster-1."+global, "0 1 8080 cluster-2."+global)},
			get:  (*Records).SRV,
			want: []string{
				global + ".\t30\tIN\tSRV\t0 2 8080 cluster-1." + global + ".",
				global + ".\t30\tIN\tSRV\t0 1 8080 cluster-2." + global + ".",
			},
		},
		{
			name: "TXT values lose ExternalDNS's quotes and keep backslashes",
			eps:  []extdnsv1alpha1.Endpoint{shared(global, "TXT", 30, `"heritage=kfed"`, `a\b`)},
			get:  (*Records).TXT,
			want: []string{global + ".\t30\tIN\tTXT\t\"heritage=kfed\"", global + ".\t30\tIN\tTXT\t\"a\\\\b\""},
		},
		{
			name: "a long TXT value is cut into strings of 255 octets",
			eps:  []extdnsv1alpha1.Endpoint{shared(global, "TXT", 30, strings.Repeat("x", 300))},
			get:  (*Records).TXT,
			want: []string{global + ".\t30\tIN\tTXT\t\"" + strings.Repeat("x", 255) + "\" \"" + strings.Repeat("x", 45) + "\""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New("", 45)
			err := x.Set("default/demo", tt.eps, nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Set error %v, want one containing %q", err, tt.wantErr)
			}
			r, _ := x.Lookup(global + ".")
			if r == nil {
				t.Fatal("no records")
			}
			if got := strs(tt.get(r)); !slices.Equal(got, tt.want) {
				t.Errorf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestVersionChangesWithEveryChangeOnly(t *testing.T) {
	x := New("", 30)
	s0 := x.Version()
	mustSet(t, x, "default/demo", shared(global, "A", 30, "192.0.2.1"))
	s1 := x.Version()
	x.Delete("default/demo")
	s2 := x.Version()
	x.Delete("default/demo") // nothing to delete: no change
	if !(s0 < s1 && s1 < s2 && x.Version() == s2) {
		t.Errorf("versions %d, %d, %d, %d; want growing with each change only", s0, s1, s2, x.Version())
	}
}

func TestLookupsRunBesideChanges(t *testing.T) {
	x := New("cluster-1", 30)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		var buf []dns.RR
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r, _ := x.Lookup(global + "."); r != nil {
				buf = r.AppendAddresses(buf[:0], dns.TypeA, rand.IntN)
			}
		}
	})
	for i := range 500 {
		mustSet(t, x, "default/demo", shard(global, "cluster-1", 1, []string{fmt.Sprintf("127.1.%d.%d", i/250, i%250)}))
		if i%3 == 0 {
			x.Delete("default/demo")
		}
	}
	close(stop)
	wg.Wait()
}

func mustSet(t *testing.T, x *Index, key string, eps ...extdnsv1alpha1.Endpoint) {
	t.Helper()
	if err := x.Set(key, eps, nil); err != nil {
		t.Fatal(err)
	}
}

func addressesAt(x *Index, name string) []string {
	r, _ := x.Lookup(name + ".")
	if r == nil {
		return nil
	}
	var out []string
	for _, rr := range r.AppendAddresses(nil, dns.TypeA, first) {
		out = append(out, rr.(*dns.A).A.String())
	}
	return out
}

func TestNamesListsEveryNameWithRecordsInOrder(t *testing.T) {
	x := New("", 30)
	mustSet(t, x, "default/b", shared("b.svc.kfed.test", "A", 30, "192.0.2.2"))
	mustSet(t, x, "default/a", shared("a.svc.kfed.test", "A", 30, "192.0.2.1"), shared("x.a.svc.kfed.test", "TXT", 30, "t"))
	var got []string
	for _, n := range x.Names() {
		got = append(got, n.Name)
	}
	// svc.kfed.test. and kfed.test. are empty non-terminals: no records, not listed.
	want := []string{"a.svc.kfed.test.", "b.svc.kfed.test.", "x.a.svc.kfed.test."}
	if !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

// The index keeps addresses packed and builds records for each answer: what
// comes out must be what went in, whatever the number of clusters (more
// than the decoder's room on the stack), the family, the TTL and the weight.
func TestAddressesComeBackAsWritten(t *testing.T) {
	many := func(n int, family string) []extdnsv1alpha1.Endpoint {
		var eps []extdnsv1alpha1.Endpoint
		for i := range n {
			target := fmt.Sprintf("127.2.%d.1", i)
			if family == "AAAA" {
				target = fmt.Sprintf("2001:db8::%x:1", i+1)
			}
			eps = append(eps, shard(global, fmt.Sprintf("cluster-%02d", i), 1000+i, []string{target}))
		}
		return eps
	}
	tests := []struct {
		name      string
		qtype     uint16
		endpoints []extdnsv1alpha1.Endpoint
		want      []string
	}{
		{
			name:      "one address, the highest TTL a record may have",
			qtype:     dns.TypeA,
			endpoints: []extdnsv1alpha1.Endpoint{shared(global, "A", 1<<31-1, "192.0.2.1")},
			want:      []string{global + ".\t2147483647\tIN\tA\t192.0.2.1"},
		},
		{
			name:      "IPv6, several addresses in one cluster, in address order",
			qtype:     dns.TypeAAAA,
			endpoints: []extdnsv1alpha1.Endpoint{shard(global, "cluster-1", 1, []string{"2001:db8::2", "2001:db8::1"})},
			want:      []string{global + ".\t30\tIN\tAAAA\t2001:db8::1", global + ".\t30\tIN\tAAAA\t2001:db8::2"},
		},
	}
	for _, family := range []string{"A", "AAAA"} {
		tt := struct {
			name      string
			qtype     uint16
			endpoints []extdnsv1alpha1.Endpoint
			want      []string
		}{name: "twenty clusters of weight over 1000, " + family, qtype: dns.StringToType[family], endpoints: many(20, family)}
		for i := range 20 {
			target := fmt.Sprintf("127.2.%d.1", i)
			if family == "AAAA" {
				target = fmt.Sprintf("2001:db8::%x:1", i+1)
			}
			tt.want = append(tt.want, global+".\t30\tIN\t"+family+"\t"+target)
		}
		tests = append(tests, tt)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New("", 30)
			if err := x.Set("default/demo", tt.endpoints, nil); err != nil {
				t.Fatal(err)
			}
			r, _ := x.Lookup(global + ".")
			if r == nil {
				t.Fatal("no records")
			}
			all := strs(r.AppendAll(nil, tt.qtype))
			if !slices.Equal(all, tt.want) {
				t.Errorf("AppendAll = %q, want %q", all, tt.want)
			}
			answer := strs(r.AppendAddresses(nil, tt.qtype, rand.IntN))
			slices.Sort(answer)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(answer, want) {
				t.Errorf("AppendAddresses = %q, want %q in any order", answer, want)
			}
		})
	}
}

func versionEP(ip string) []extdnsv1alpha1.Endpoint {
	return []extdnsv1alpha1.Endpoint{
		shard(global, "cluster-1", 1, []string{ip}),
		shard("cluster-1."+global, "cluster-1", 1, []string{ip}),
		shared("_http._tcp."+global, "SRV", 30, "0 50 80 cluster-1."+global),
		shared("x.a.b."+global, "TXT", 30, "t"),
	}
}

// An object's names and records live in one string, which the index's maps
// must not keep alive once the object is replaced or deleted: a map keeps
// the key it was first given, so a key that pointed into the first version
// would hold every version's string for as long as the name exists.
func TestReplacedObjectsAreGarbage(t *testing.T) {
	version := versionEP
	tests := []struct {
		name string
		then func(x *Index)
	}{
		{"updated", func(x *Index) { mustSet(t, x, "default/demo", version("192.0.2.2")...) }},
		{"updated twice", func(x *Index) {
			mustSet(t, x, "default/demo", version("192.0.2.2")...)
			mustSet(t, x, "default/demo", version("192.0.2.3")...)
		}},
		{"deleted", func(x *Index) { x.Delete("default/demo") }},
		{"deleted while another object has records at its names", func(x *Index) {
			mustSet(t, x, "default/other", shard(global, "cluster-2", 1, []string{"192.0.2.9"}))
			x.Delete("default/demo")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New("cluster-1", 30)
			o := x.Parse(version("192.0.2.1"), nil)
			first := weak.Make(unsafe.StringData(o.records[0].s))
			if err := x.SetObject("default/demo", o); err != nil {
				t.Fatal(err)
			}
			o = nil
			tt.then(x)
			runtime.GC()
			runtime.GC()
			if first.Value() != nil {
				t.Errorf("the first version's string is still reachable")
			}
			runtime.KeepAlive(x)
		})
	}
}
