// Package explain tests `kfed explain` against a `kfed dev up` bed
// (devenv.StartDev): what it says each member's CoreDNS answers, and what it
// says the edge CoreDNS answers clients in three subnets, is what those
// CoreDNS servers answer real queries (miekg/dns, with EDNS Client Subnet at
// the edge).
//
// Like every package under test/e2e, it runs against real kube-apiserver and
// etcd processes on loopback, real CoreDNS with kfed's plugin and real
// kfed-healthcheck agents; test/fedtest holds what the packages share.
package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/ops/explain"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

const demo = "demo.default.dev.svc.kfed.test."

func TestExplainMatchesEveryCoreDNS(t *testing.T) {
	d, bin := fedtest.StartDevBed(t, "./cmd/kfed")
	// As a user who sourced DIR/env: the kubeconfig and the GeoIP database
	// come from it.
	env := os.Environ()
	for k, v := range fedtest.ReadEnvFile(t, filepath.Join(d.Dir, "env")) {
		env = append(env, k+"="+v)
	}
	kfed := func(args ...string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(bin, "kfed"), args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("kfed %s: %w: %s", strings.Join(args, " "), err, stderr.String())
		}
		return out, nil
	}
	explainJSON := func(args ...string) (*explain.Explanation, error) {
		out, err := kfed(append(args, "-o", "json")...)
		if err != nil {
			return nil, err
		}
		var e explain.Explanation
		if err := json.Unmarshal(out, &e); err != nil {
			return nil, fmt.Errorf("kfed explain -o json printed %q: %w", out, err)
		}
		return &e, nil
	}
	// Every member serves demo with all three clusters first.
	for i, addr := range d.DNS {
		framework.Eventually(t, time.Minute, func(context.Context) error {
			r, err := fedtest.Query(addr, "udp", demo, dns.TypeA)
			if err != nil {
				return err
			}
			if len(r.Answer) != 3 {
				return fmt.Errorf("cluster-%d's CoreDNS answers %v", i+1, fedtest.AnswerStrings(r))
			}
			return nil
		})
	}

	// The bed's places: cluster-1 and cluster-2 in us-east1 (zones b and
	// c), cluster-3 in europe-west1, all of weight 1.
	fromCluster := [][][]string{
		{{"cluster-1"}, {"cluster-2"}, {"cluster-3"}},
		{{"cluster-2"}, {"cluster-1"}, {"cluster-3"}},
		{{"cluster-3"}, {"cluster-1", "cluster-2"}},
	}
	atEdge := map[string][][]string{
		"192.0.2.0/24":    {{"cluster-1", "cluster-2"}, {"cluster-3"}}, // New York
		"198.51.100.0/24": {{"cluster-3"}, {"cluster-1", "cluster-2"}}, // Frankfurt
		"203.0.113.0/24":  {{"cluster-3"}, {"cluster-1", "cluster-2"}}, // Tokyo: Belgium is nearer than South Carolina
	}
	for i, addr := range d.DNS {
		cluster := fmt.Sprintf("cluster-%d", i+1)
		t.Run("from "+cluster, func(t *testing.T) {
			// A weight may still move as replicas become ready: explain and
			// the queries agree once it settles.
			framework.Eventually(t, 30*time.Second, func(context.Context) error {
				e, err := explainJSON("explain", demo, "--from", cluster)
				if err != nil {
					return err
				}
				if got := groupsOf(e); !slices.EqualFunc(got, fromCluster[i], slices.Equal) {
					return fmt.Errorf("explain orders %v, want %v", got, fromCluster[i])
				}
				return matches(e, func() (*dns.Msg, error) { return fedtest.Query(addr, "udp", demo, dns.TypeA) })
			})
		})
	}
	for _, p := range devenv.DevPlaces() {
		subnet := p.Network.String()
		t.Run("at the edge from "+p.City, func(t *testing.T) {
			framework.Eventually(t, 30*time.Second, func(context.Context) error {
				e, err := explainJSON("explain", demo, "--client-subnet", subnet)
				if err != nil {
					return err
				}
				if !strings.Contains(e.Vantage, "placed by GeoIP") {
					return fmt.Errorf("explain placed %s nowhere: %s", subnet, e.Vantage)
				}
				if got := groupsOf(e); !slices.EqualFunc(got, atEdge[subnet], slices.Equal) {
					return fmt.Errorf("explain orders %v, want %v", got, atEdge[subnet])
				}
				return matches(e, func() (*dns.Msg, error) { return fedtest.QuerySubnet(d.Edge, demo, subnet) })
			})
		})
	}
	t.Run("a federated Gateway's hostname from cluster-3", func(t *testing.T) {
		shop := dns.Fqdn(d.Shop)
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			e, err := explainJSON("explain", shop, "--from", "cluster-3")
			if err != nil {
				return err
			}
			if len(e.Steps) == 0 || len(e.Steps[0].Objects) == 0 || e.Steps[0].Objects[0].Owner != "Gateway default/demo-gw" {
				return fmt.Errorf("explain says %s is published by %+v, want the Gateway default/demo-gw", shop, e.Steps)
			}
			return matches(e, func() (*dns.Msg, error) { return fedtest.Query(d.DNS[2], "udp", shop, dns.TypeA) })
		})
	})
	t.Run("SRV from cluster-2", func(t *testing.T) {
		name := "_http._tcp." + demo
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			e, err := explainJSON("explain", name, "--type", "SRV", "--from", "cluster-2")
			if err != nil {
				return err
			}
			r, err := fedtest.Query(d.DNS[1], "udp", name, dns.TypeSRV)
			if err != nil {
				return err
			}
			if got, want := fedtest.Sorted(rrStrings(r.Answer)), fedtest.Sorted(rrStrings(parse(e.Answer))); !slices.Equal(got, want) {
				return fmt.Errorf("cluster-2's CoreDNS answers %v, explain says %v", got, want)
			}
			return nil
		})
	})
	t.Run("the text says why", func(t *testing.T) {
		out, err := kfed("explain", demo, "--from", "cluster-1")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"published by DNSEndpoint default/demo for Service default/demo", "routing: proximity",
			"votes: ", "#1 cluster-1", "this CoreDNS's own cluster, first, by its cluster IPs", "own region", "elsewhere"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("kfed explain does not say %q:\n%s", want, out)
			}
		}
		t.Logf("kfed explain %s --from cluster-1:\n%s", demo, out)
		out, err = kfed("explain", demo, "--client-subnet", "203.0.113.0/24")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kfed explain %s --client-subnet 203.0.113.0/24:\n%s", demo, out)
	})
	t.Run("errors name what is wrong", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"explain", "nope.default.dev.svc.kfed.test"}, "no DNSEndpoint has nope.default.dev.svc.kfed.test"},
			{[]string{"explain", demo, "--from", "cluster-9"}, "--from cluster-9: no such member cluster"},
			{[]string{"explain", demo, "--from", "cluster-1", "--client-subnet", "192.0.2.0/24"}, "not both"},
		} {
			if _, err := kfed(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("kfed %v: %v, want an error saying %q", tt.args, err, tt.want)
			}
		}
	})
}

// matches checks that answers to query, asked a few times, are what e says:
// the same addresses, in an order that keeps e's groups in order (within a
// group the plugin draws anew for every query).
func matches(e *explain.Explanation, query func() (*dns.Msg, error)) error {
	if len(e.Steps) == 0 {
		return fmt.Errorf("explain has no steps: %+v", e)
	}
	group := map[string]int{}
	for _, r := range e.Steps[len(e.Steps)-1].Order {
		for _, a := range r.Addresses {
			group[a] = r.Group
		}
	}
	want := fedtest.Sorted(rrStrings(parse(e.Answer)))
	for range 10 {
		r, err := query()
		if err != nil {
			return err
		}
		got := rrStrings(r.Answer)
		if !slices.Equal(fedtest.Sorted(got), want) {
			return fmt.Errorf("CoreDNS answers %v, explain says %v", got, want)
		}
		for i := 1; i < len(got); i++ {
			if group[got[i]] < group[got[i-1]] {
				return fmt.Errorf("CoreDNS answers %v: %s (group %d) after %s (group %d), explain orders %+v",
					got, got[i], group[got[i]], got[i-1], group[got[i-1]], e.Steps[len(e.Steps)-1].Order)
			}
		}
	}
	return nil
}

// groupsOf is the clusters of each group of e's order, in order.
func groupsOf(e *explain.Explanation) [][]string {
	var out [][]string
	if len(e.Steps) == 0 {
		return nil
	}
	for _, r := range e.Steps[len(e.Steps)-1].Order {
		if r.Group == len(out) {
			out = append(out, nil)
		}
		out[r.Group] = append(out[r.Group], r.Cluster)
	}
	for _, g := range out {
		slices.Sort(g)
	}
	return out
}

func parse(rrs []string) []dns.RR {
	var out []dns.RR
	for _, s := range rrs {
		if rr, err := dns.NewRR(s); err == nil && rr != nil {
			out = append(out, rr)
		}
	}
	return out
}

// rrStrings are the records' data: an address, or an SRV's fields.
func rrStrings(rrs []dns.RR) []string { return fedtest.RRStrings(rrs) }
