package agent

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// endpoint is the DNSEndpoint of Service shop/name with clusters, each
// published at its per-cluster name as the services controller does.
func endpoint(name string, annotations map[string]string, clusters ...dnsendpoint.Cluster) extdnsv1alpha1.DNSEndpoint {
	ep := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: annotations}}
	dnsendpoint.SetClusters(&ep, clusters)
	names := dnsendpoint.NewNames("dev", "kfed.test", "shop", name)
	for _, c := range clusters {
		for _, a := range c.Addresses {
			typ := "A"
			if a.Is6() {
				typ = "AAAA"
			}
			ep.Spec.Endpoints = append(ep.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: names.Cluster(c.Name), RecordType: typ, Targets: []string{a.String()}})
		}
	}
	return ep
}

var rule = tenancy.NewEndpoints("dev", []string{"kfed-system"})

func TestTargets(t *testing.T) {
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	http := dnsendpoint.Port{Name: "http", Protocol: "TCP", Port: 8080}
	dns := dnsendpoint.Port{Name: "dns", Protocol: "UDP", Port: 53}
	defaults := healthcheck.Defaults()
	eps := []extdnsv1alpha1.DNSEndpoint{
		endpoint("web", nil,
			dnsendpoint.Cluster{Name: "c1", Addresses: addrs("127.1.0.1", "fd00::1"), Ports: []dnsendpoint.Port{dns, http}},
			dnsendpoint.Cluster{Name: "c2", Addresses: addrs("127.2.0.1"), Ports: []dnsendpoint.Port{http}},
			dnsendpoint.Cluster{Name: "pending", Ports: []dnsendpoint.Port{http}}),
		endpoint("api", map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: "/healthz", kfedv1alpha1.AnnotationHealthPort: "9090"},
			dnsendpoint.Cluster{Name: "c1", Addresses: addrs("127.1.0.2"), Ports: []dnsendpoint.Port{http}}),
		endpoint("udp-only", nil, dnsendpoint.Cluster{Name: "c1", Addresses: addrs("127.1.0.3"), Ports: []dnsendpoint.Port{dns}}),
		endpoint("bad", map[string]string{kfedv1alpha1.AnnotationHealthInterval: "soon"},
			dnsendpoint.Cluster{Name: "c1", Addresses: addrs("127.1.0.4"), Ports: []dnsendpoint.Port{http}}),
	}
	got, errs := Targets(rule, eps, defaults)
	var lines []string
	for _, tg := range got {
		var as []string
		for _, a := range tg.Addrs {
			as = append(as, a.String())
		}
		lines = append(lines, tg.Key+" "+tg.Cluster+" "+string(tg.Spec.Kind)+tg.Spec.Path+" "+strings.Join(as, ","))
	}
	want := []string{
		"shop/api/c1 c1 http/healthz 127.1.0.2:9090",
		"shop/bad/c1 c1 tcp 127.1.0.4:8080",
		"shop/web/c1 c1 tcp 127.1.0.1:8080,[fd00::1]:8080",
		"shop/web/c2 c2 tcp 127.2.0.1:8080",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("targets\n  %s\nwant\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "shop/bad") || !strings.Contains(errs[0].Error(), "probing with the defaults") {
		t.Errorf("problems %v, want one about shop/bad probed with the defaults", errs)
	}
	if got[1].Spec.Interval != defaults.Interval {
		t.Errorf("a bad interval is probed at %v, want the default %v", got[1].Spec.Interval, defaults.Interval)
	}
}

// A DNSEndpoint in another namespace that names shop/web's names with its
// own cluster table makes no checker probe its addresses; one that
// publishes its own name is probed there, and a hostname cluster whose
// name its CNAME targets is probed at the hostname's addresses.
func TestTargetsProbeOnlyWhatTheObjectMayPublish(t *testing.T) {
	http := dnsendpoint.Port{Name: "http", Protocol: "TCP", Port: 8080}
	web := dnsendpoint.NewNames("dev", "kfed.test", "shop", "web")
	own := dnsendpoint.NewNames("dev", "kfed.test", "intruder", "x")
	intruder := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "intruder", Name: "x"},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: web.Cluster("c1"), RecordType: "A", Targets: []string{"198.51.100.66"}},
			{DNSName: own.Global(), RecordType: "A", Targets: []string{"198.51.100.68"}},
			{DNSName: own.Cluster("c3"), RecordType: "CNAME", Targets: []string{"LB.example.com."}},
		}}}
	dnsendpoint.SetClusters(&intruder, []dnsendpoint.Cluster{
		{Name: "c1", Addresses: []netip.Addr{netip.MustParseAddr("198.51.100.66")}, Ports: []dnsendpoint.Port{http}},
		{Name: "c2", Addresses: []netip.Addr{netip.MustParseAddr("198.51.100.68"), netip.MustParseAddr("198.51.100.69")}, Ports: []dnsendpoint.Port{http}},
		{Name: "c3", Hostname: "lb.example.com", Addresses: []netip.Addr{netip.MustParseAddr("198.51.100.70")}, Ports: []dnsendpoint.Port{http}},
	})
	got, errs := Targets(rule, []extdnsv1alpha1.DNSEndpoint{intruder}, healthcheck.Defaults())
	var lines []string
	for _, tg := range got {
		var as []string
		for _, a := range tg.Addrs {
			as = append(as, a.String())
		}
		lines = append(lines, tg.Key+" "+strings.Join(as, ","))
	}
	want := []string{"intruder/x/c2 198.51.100.68:8080", "intruder/x/c3 198.51.100.70:8080"}
	if !slices.Equal(lines, want) {
		t.Errorf("targets\n  %s\nwant\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), web.Cluster("c1")) {
		t.Errorf("problems %v, want one naming the refused name", errs)
	}
}
