package kfed

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/test/oldlayout"
)

// edgeEndpoints are demo's global name with shards in us-east1 (two) and
// europe-west1, all of weight 1, located by the region table.
func edgeEndpoints() []extdnsv1alpha1.Endpoint {
	return []extdnsv1alpha1.Endpoint{
		shardEndpoint(global, "cluster-1", "us-east1-b", 1, "127.101.0.1", "10.96.0.10"),
		shardEndpoint(global, "cluster-2", "us-east1-c", 1, "127.102.0.1", "10.97.0.10"),
		shardEndpoint(global, "cluster-3", "europe-west1-b", 1, "127.103.0.1", "10.98.0.10"),
		shardEndpoint(useastB, "cluster-1", "us-east1-b", 1, "127.101.0.1", "10.96.0.10"),
	}
}

// located is a request context in which geoip placed the client at lat,
// lon ("" for a client its database does not place).
func located(lat, lon string) context.Context {
	ctx := metadata.ContextWithMetadata(context.Background())
	metadata.SetValueFunc(ctx, labelLatitude, func() string { return lat })
	metadata.SetValueFunc(ctx, labelLongitude, func() string { return lon })
	return ctx
}

func withSubnet(m *dns.Msg, cidr string) *dns.Msg {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		panic(err)
	}
	ones, _ := n.Mask.Size()
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	o.SetUDPSize(1232)
	o.Option = append(o.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(ones), Address: n.IP.To4()})
	m.Extra = append(m.Extra, o)
	return m
}

func TestServeDNSAtTheEdgeOrdersByTheClientsLocation(t *testing.T) {
	const east1, east2, europe = "127.101.0.1", "127.102.0.1", "127.103.0.1"
	tests := []struct {
		name     string
		cluster  string // the plugin's cluster; "" at the edge
		weighted bool   // the Service is routed by weight, not proximity
		loaded   bool   // routed by weight, and its weights follow loads
		ctx      context.Context
		qname    string
		subnet   string
		first    []string // the addresses the answer may start with
		rcode    int
		scope    int // the reply's ECS scope; -1 for no ECS option
	}{
		{name: "a client in Frankfurt gets Europe first, with the subnet as scope",
			ctx: located("50.11", "8.68"), qname: global, subnet: "198.51.100.0/24", first: []string{europe}, scope: 24},
		{name: "a client in New York gets a us-east1 cluster first, with the subnet as scope",
			ctx: located("40.71", "-74.01"), qname: global, subnet: "192.0.2.0/24", first: []string{east1, east2}, scope: 24},
		{name: "a client the database does not place gets the weighted order, scope 0",
			ctx: located("", ""), qname: global, subnet: "203.0.113.0/24", first: []string{east1, east2, europe}, scope: 0},
		{name: "without geoip's metadata, the weighted order, scope 0",
			ctx: context.Background(), qname: global, subnet: "198.51.100.0/24", first: []string{east1, east2, europe}, scope: 0},
		{name: "a name with one cluster is the same everywhere: scope 0",
			ctx: located("50.11", "8.68"), qname: useastB, subnet: "198.51.100.0/24", first: []string{east1}, scope: 0},
		{name: "a name that does not exist is the same everywhere: scope 0",
			ctx: located("50.11", "8.68"), qname: "nope." + zone, subnet: "198.51.100.0/24", rcode: dns.RcodeNameError, scope: 0},
		{name: "a location without ECS (the source address's) orders too, and the reply has no ECS",
			ctx: located("50.11", "8.68"), qname: global, first: []string{europe}, scope: -1},
		{name: "a Service routed by weight gets the weighted order, scope 0", weighted: true,
			ctx: located("50.11", "8.68"), qname: global, subnet: "198.51.100.0/24", first: []string{east1, east2, europe}, scope: 0},
		{name: "a Service whose weights follow loads is drawn for each subnet: the subnet as scope", weighted: true, loaded: true,
			ctx: located("50.11", "8.68"), qname: global, subnet: "198.51.100.0/24", first: []string{east1, east2, europe}, scope: 24},
		{name: "inside a cluster the location is not asked and ECS not answered",
			cluster: "cluster-1", ctx: located("50.11", "8.68"), qname: global, subnet: "198.51.100.0/24", first: []string{"10.96.0.10"}, scope: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKfed(t, tt.cluster, map[string][]extdnsv1alpha1.Endpoint{"default/demo": edgeEndpoints()})
			if tt.weighted {
				eps := edgeEndpoints()
				table := locatedTable(t, eps)
				var err error
				if tt.loaded {
					// In today's layout, whose table the groups read.
					ep := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
					if err := oldlayout.Upgrade(ep); err != nil {
						t.Fatal(err)
					}
					eps = ep.Spec.Endpoints
					if table, err = dnsendpoint.ReadClusters(ep); err != nil {
						t.Fatal(err)
					}
					for _, c := range table {
						c.Load = new(0.5)
					}
				}
				if err := k.index.SetObject("default/demo", k.index.ParseRouted(eps, table, false)); err != nil {
					t.Fatal(err)
				}
			}
			firsts := map[string]bool{}
			for i := range 100 {
				m := test.Case{Qname: tt.qname, Qtype: dns.TypeA}.Msg()
				subnet := tt.subnet
				if subnet != "" {
					// A subnet gets one draw: the draw by weight is seen
					// across subnets (TestServeDNSGivesEachSubnetADrawOfItsOwn).
					subnet = nthSubnet(subnet, i)
					m = withSubnet(m, subnet)
				}
				rec := dnstest.NewRecorder(&test.ResponseWriter{})
				if _, err := k.ServeDNS(tt.ctx, request.NewScrubWriter(m, rec), m); err != nil {
					t.Fatal(err)
				}
				resp := rec.Msg
				if resp.Rcode != tt.rcode {
					t.Fatalf("rcode %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[tt.rcode])
				}
				if len(resp.Answer) > 0 {
					a := resp.Answer[0].(*dns.A).A.String()
					if !slices.Contains(tt.first, a) {
						t.Fatalf("answer starts with %s, want one of %v", a, tt.first)
					}
					firsts[a] = true
				}
				scope := -1
				if o := resp.IsEdns0(); o != nil {
					for _, e := range o.Option {
						if s, ok := e.(*dns.EDNS0_SUBNET); ok {
							scope = int(s.SourceScope)
							if s.Family != 1 || s.SourceNetmask != 24 || !s.Address.Equal(withSubnetAddress(subnet)) {
								t.Fatalf("ECS %v does not echo the query's %s", s, subnet)
							}
						}
					}
				}
				if scope != tt.scope {
					t.Fatalf("ECS scope %d, want %d (-1: none)", scope, tt.scope)
				}
			}
			if len(tt.first) > 1 && len(firsts) < 2 {
				t.Errorf("always %v first: equally near clusters are not drawn by weight", firsts)
			}
		})
	}
}

// nthSubnet is cidr, an IPv4 /24, with its third byte i.
func nthSubnet(cidr string, i int) string {
	ip := withSubnetAddress(cidr).To4()
	return fmt.Sprintf("%d.%d.%d.0/24", ip[0], ip[1], byte(i))
}

// A resolver's client subnet gets a draw of its own among weights that
// follow loads: every query from it the same order while the weights hold,
// subnets spread over the clusters by weight; a /0 subnet (no tailoring
// asked) and a client without ECS get a fresh draw each query.
func TestServeDNSGivesEachSubnetADrawOfItsOwn(t *testing.T) {
	k := newTestKfed(t, "", map[string][]extdnsv1alpha1.Endpoint{})
	ep := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: edgeEndpoints()}}
	if err := oldlayout.Upgrade(ep); err != nil {
		t.Fatal(err)
	}
	table, err := dnsendpoint.ReadClusters(ep)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range table {
		c.Load = new(0.5)
	}
	if err := k.index.SetObject("default/demo", k.index.ParseRouted(ep.Spec.Endpoints, table, false)); err != nil {
		t.Fatal(err)
	}
	ask := func(subnet string) string {
		m := test.Case{Qname: global, Qtype: dns.TypeA}.Msg()
		if subnet != "" {
			m = withSubnet(m, subnet)
		}
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := k.ServeDNS(context.Background(), request.NewScrubWriter(m, rec), m); err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, rr := range rec.Msg.Answer {
			order = append(order, rr.(*dns.A).A.String())
		}
		return strings.Join(order, " ")
	}
	firsts := map[string]int{}
	const subnets = 600
	for i := range subnets {
		subnet := fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
		order := ask(subnet)
		for range 4 {
			if again := ask(subnet); again != order {
				t.Fatalf("subnet %s answered %s, then %s", subnet, order, again)
			}
		}
		first, _, _ := strings.Cut(order, " ")
		firsts[first]++
	}
	for a, n := range firsts {
		if n < subnets/5 || n > subnets/2 {
			t.Errorf("%s first for %d of %d subnets, want about a third: %v", a, n, subnets, firsts)
		}
	}
	for _, subnet := range []string{"0.0.0.0/0", ""} {
		seen := map[string]bool{}
		for range 50 {
			seen[ask(subnet)] = true
		}
		if len(seen) < 2 {
			t.Errorf("subnet %q: always %v, want a draw at each query", subnet, seen)
		}
	}
}

func withSubnetAddress(cidr string) net.IP {
	_, n, _ := net.ParseCIDR(cidr)
	return n.IP
}
