package fedtest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/miekg/dns"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DNSZone is the zone, fully qualified, the e2e tests' CoreDNS serve.
const DNSZone = "kfed.test."

// CoreDNSKubeconfig is a kubeconfig (context "federation") of the identity
// member cluster's kfed CoreDNS has in the control plane, so that the
// plugin runs with the permissions kfed join gives it and no more.
func CoreDNSKubeconfig(t testing.TB, f *framework.Federation, cluster string) string {
	t.Helper()
	return AgentKubeconfig(t, f, cluster, identity.CoreDNS)
}

// AgentKubeconfig is a kubeconfig (context "federation") of member
// cluster's own identity c in the control plane (ADR 0013), created if it
// has none, with a new token read from a file beside it
// (devenv.Env.AgentKubeconfig).
func AgentKubeconfig(t testing.TB, f *framework.Federation, cluster string, c identity.Component) string {
	t.Helper()
	path, err := f.Env.AgentKubeconfig(context.Background(), cluster, c)
	if err != nil {
		t.Fatalf("a kubeconfig for %s's %s: %v", cluster, c, err)
	}
	return path
}

// ServiceAccountKubeconfig applies manifests to the control plane and
// writes a kubeconfig (context "federation") whose only identity is the
// ServiceAccount kfed-system/name they make.
func ServiceAccountKubeconfig(t *testing.T, f *framework.Federation, name string, manifests ...string) string {
	t.Helper()
	f.Apply("federation", manifests)
	admin, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["federation"] = admin.Clusters["federation"]
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: f.Token("federation", "kfed-system", name)}
	cfg.Contexts["federation"] = &clientcmdapi.Context{Cluster: "federation", AuthInfo: name}
	cfg.CurrentContext = "federation"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildCoreDNS returns CoreDNS with the plugin (framework.BuildCommand).
func BuildCoreDNS(t *testing.T) string {
	t.Helper()
	return framework.BuildCommand(t, "coredns")
}

// Query asks the DNS server at addr for name and qtype over proto (udp or tcp).
func Query(addr, proto, name string, qtype uint16) (*dns.Msg, error) {
	c := &dns.Client{Net: proto, Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s over %s: %w", dns.TypeToString[qtype], name, proto, err)
	}
	if !r.Authoritative {
		return nil, fmt.Errorf("%s %s over %s: reply not authoritative", dns.TypeToString[qtype], name, proto)
	}
	return r, nil
}

// WantAddresses checks the answer to name holds exactly want: CNAMEs as
// "CNAME target" in order first, then the addresses in any order.
func WantAddresses(addr, proto, name string, qtype uint16, want ...string) error {
	r, err := Query(addr, proto, name, qtype)
	if err != nil {
		return err
	}
	got := AnswerStrings(r)
	n := 0
	for n < len(got) && strings.HasPrefix(got[n], "CNAME ") {
		n++
	}
	slices.Sort(got[n:])
	want = slices.Clone(want)
	m := 0
	for m < len(want) && strings.HasPrefix(want[m], "CNAME ") {
		m++
	}
	slices.Sort(want[m:])
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s over %s answered %v (%s), want %v", name, proto, got, dns.RcodeToString[r.Rcode], want)
	}
	return nil
}

// WantRcode checks that the server at addr answers name with rcode.
func WantRcode(addr, name string, rcode int) error {
	r, err := Query(addr, "udp", name, dns.TypeA)
	if err != nil {
		return err
	}
	if r.Rcode != rcode {
		return fmt.Errorf("%s answered %s, want %s", name, dns.RcodeToString[r.Rcode], dns.RcodeToString[rcode])
	}
	return nil
}

// AnswerStrings is the answer section of r, one string per record.
func AnswerStrings(r *dns.Msg) []string { return RRStrings(r.Answer) }

// RRStrings are rrs as strings.
func RRStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		case *dns.CNAME:
			out = append(out, "CNAME "+rr.Target)
		case *dns.SRV:
			out = append(out, fmt.Sprintf("%d %d %d %s", rr.Priority, rr.Weight, rr.Port, rr.Target))
		}
	}
	return out
}

// QuerySubnet asks addr for name's A records as a resolver serving subnet
// (EDNS Client Subnet, RFC 7871) does.
func QuerySubnet(addr, name, subnet string) (*dns.Msg, error) {
	_, n, err := net.ParseCIDR(subnet)
	if err != nil {
		return nil, err
	}
	ones, _ := n.Mask.Size()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	o := m.IsEdns0()
	o.Option = append(o.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(ones), Address: n.IP.To4()})
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return nil, fmt.Errorf("A %s with ECS %s: %w", name, subnet, err)
	}
	if !r.Authoritative || r.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("A %s with ECS %s: %s, authoritative %v", name, subnet, dns.RcodeToString[r.Rcode], r.Authoritative)
	}
	return r, nil
}

// SubnetScope returns the scope prefix length of the reply's ECS option, and
// whether it has one.
func SubnetScope(r *dns.Msg) (int, bool) {
	if o := r.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if s, ok := e.(*dns.EDNS0_SUBNET); ok {
				return int(s.SourceScope), true
			}
		}
	}
	return 0, false
}

// WantTTL checks that the server at addr answers name with ttl.
func WantTTL(addr, name string, ttl uint32) error {
	r, err := Query(addr, "udp", name, dns.TypeA)
	if err != nil {
		return err
	}
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == dns.TypeA && rr.Header().Ttl != ttl {
			return fmt.Errorf("%s answers TTL %d, want %d", name, rr.Header().Ttl, ttl)
		}
	}
	if len(r.Answer) == 0 {
		return fmt.Errorf("%s: no answer", name)
	}
	return nil
}

// BindProvider is the DNS sync's configuration for BIND srv serving zone,
// records owned by owner.
func BindProvider(srv *bindtest.Server, zone, owner string) dnssync.ProviderFlags {
	host, port, _ := net.SplitHostPort(srv.Addr)
	p, _ := strconv.Atoi(port)
	return dnssync.ProviderFlags{
		Provider: "rfc2136", OwnerID: owner, RFC2136Host: host, RFC2136Port: p, RFC2136Zone: zone,
		RFC2136KeyName: bindtest.KeyName, RFC2136Secret: srv.SecretFile,
	}
}

// BindAnswers asks BIND for key's records and renders their values as the
// DNSEndpoint writes targets.
func BindAnswers(t *testing.T, srv *bindtest.Server, key dnsprovider.Key) []string {
	t.Helper()
	var out []string
	for _, rr := range srv.Query(t, key.Name, dns.StringToType[key.Type]) {
		if rr.Header().Rrtype != dns.StringToType[key.Type] || !strings.EqualFold(rr.Header().Name, key.Name+".") {
			continue
		}
		var v string
		switch rr := rr.(type) {
		case *dns.A:
			v = rr.A.String()
		case *dns.AAAA:
			v = rr.AAAA.String()
		case *dns.CNAME:
			v = rr.Target
		case *dns.SRV:
			v = fmt.Sprintf("%d %d %d %s", rr.Priority, rr.Weight, rr.Port, rr.Target)
		}
		out = append(out, strings.ToLower(strings.TrimSuffix(v, ".")))
	}
	slices.Sort(out)
	return out
}
