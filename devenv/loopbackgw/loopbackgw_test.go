package loopbackgw

import (
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func TestRoutesByHost(t *testing.T) {
	g := &GW{
		opts: Options{Cluster: "cluster-1", Block: netip.MustParsePrefix("127.251.200.0/24")},
		objs: map[string]*frontend{}, inUse: map[netip.Addr]string{},
	}
	t.Cleanup(g.closeAll)
	port := int32(20000 + rand.IntN(20000))
	addr, err := g.ensure("Gateway shop/front", []listener{{port: port}}, map[string]string{"shop.example.com": "HTTPRoute shop/shop"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	catchAll, err := g.ensure("Gateway web/front", []listener{{port: port}}, map[string]string{"": "HTTPRoute web/any"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if addr == catchAll || !g.opts.Block.Contains(addr) || !g.opts.Block.Contains(catchAll) {
		t.Fatalf("addresses %v and %v: want two distinct ones from the block", addr, catchAll)
	}
	for _, tc := range []struct {
		name   string
		at     netip.Addr
		host   string
		status int
		body   string
	}{
		{"request for a routed host names the route and the cluster", addr, "shop.example.com", 200, "HTTPRoute shop/shop in cluster cluster-1 answers shop.example.com"},
		{"host is matched without case and port", addr, "SHOP.example.com:" + strconv.Itoa(int(port)), 200, "HTTPRoute shop/shop in cluster cluster-1"},
		{"host no route holds is not found", addr, "other.example.com", 404, "routes no host other.example.com"},
		{"route without hostnames takes any host", catchAll, "other.example.com", 200, "HTTPRoute web/any in cluster cluster-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(tc.at.String(), strconv.Itoa(int(port)))+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
				t.Fatalf("%d %q, want %d with %q", resp.StatusCode, b, tc.status, tc.body)
			}
		})
	}

	g.release("Gateway shop/front")
	if c, err := net.Dial("tcp", net.JoinHostPort(addr.String(), strconv.Itoa(int(port)))); err == nil {
		c.Close()
		t.Fatal("a released Gateway still accepts connections")
	}
}
