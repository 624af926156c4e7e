package drain

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

const zone = "kfed.test"

// The names the test follows: a Service in every member, its region
// us-east1 (cluster-1 and cluster-2) and cluster-1's own name, a Gateway's
// hostname in every member, and a Service only in cluster-1.
var (
	demoGlobal = "demo.default.fed.svc." + zone
	demoRegion = "demo.default.fed.svc.us-east1." + zone
	demoOwn    = "cluster-1.demo.default.fed.svc." + zone
	shop       = "shop." + zone
	solo       = "solo.default.fed.svc." + zone
	followed   = []string{demoGlobal, demoRegion, demoOwn, shop, solo}
)

// TestDrainMovesEveryAnswerOffAClusterAndUndrainRestores drains cluster-1
// of three members with kfed drain --wait and checks, once it returns,
// that every member's CoreDNS, BIND (through the controller's RFC 2136
// sync) and the Route53 and Cloud DNS local endpoints (through syncs of
// their own) answer demo's names and demo-gw's hostname without
// cluster-1's addresses, while solo, which lives only in cluster-1, keeps
// them and says so; the Cluster and kfed status show the drain. kfed
// undrain --wait brings every answer back as it was.
func TestDrainMovesEveryAnswerOffAClusterAndUndrainRestores(t *testing.T) {
	srv := bindtest.Start(t, zone)
	f := fedtest.StartGatewayFederation(t, manager.Options{
		Domain: zone, DNSInterval: 500 * time.Millisecond, DNS: fedtest.BindProvider(srv, zone, "fed"),
	}, framework.LoadBalancer())
	cp := fedtest.ControlPlane{Config: f.ControlPlane.Config, Scheme: f.Scheme, Federation: "fed"}
	r53, r53Zone := fedtest.StartRoute53Sync(t, cp, zone)
	gcp := fedtest.StartCloudDNSSync(t, cp, zone)
	fed := f.Client("federation")
	ctx := context.Background()

	demoSvc, soloSvc := fedtest.FederatedService("default", "demo"), fedtest.FederatedService("default", "solo")
	soloSvc.Annotations = map[string]string{kfedv1alpha1.AnnotationClusters: "cluster-1"}
	fedtest.Create(t, fed, demoSvc, soloSvc, fedtest.FederatedGateway("default", "demo-gw", shop))

	coredns := make([]string, len(fedtest.MemberNames))
	bin := fedtest.BuildCoreDNS(t)
	for i, m := range fedtest.MemberNames {
		kc := fedtest.CoreDNSKubeconfig(t, f, m)
		d, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
			Binary: bin, Name: "coredns-" + m, Cluster: m, Zone: zone,
			Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: zone, Federation: "fed", Cluster: m, Kubeconfig: kc, Context: "federation"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Stop)
		coredns[i] = d.Addr
	}
	all := addressesByCluster(t, fed)
	views := func(t *testing.T) map[string]func(string) []string {
		out := map[string]func(string) []string{
			"BIND":    func(name string) []string { return srv.Answers(t, name, dns.TypeA) },
			"Route53": func(name string) []string { return fedtest.Route53Targets(r53.RecordSets(r53Zone), name) },
			"Cloud DNS": func(name string) []string {
				return fedtest.CloudDNSTargets(gcp.RecordSets("kfed-test", "kfed-test"), name)
			},
		}
		for i, addr := range coredns {
			out["CoreDNS of "+fedtest.MemberNames[i]] = func(name string) []string { return coreDNSAnswers(addr, name, all.clusterIPs) }
		}
		return out
	}

	// Before: every view answers every cluster's addresses.
	before := map[string][]string{
		demoGlobal: all.of("default/demo", "cluster-1", "cluster-2", "cluster-3"),
		demoRegion: all.of("default/demo", "cluster-1", "cluster-2"),
		demoOwn:    all.of("default/demo", "cluster-1"),
		shop:       all.of("kfed-system/gateway.default.demo-gw", "cluster-1", "cluster-2", "cluster-3"),
		solo:       all.of("default/solo", "cluster-1"),
	}
	wantEverywhere(t, views(t), before, 60*time.Second)

	kfed := framework.BuildCommand(t, "kfed")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kfed, append(args, "--kubeconfig", f.Kubeconfig, "--context", "federation")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kfed %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	t.Run("drain --wait: every view moves off cluster-1 but for solo, which says why", func(t *testing.T) {
		start := time.Now()
		out := run("drain", "cluster-1", "--wait", "--timeout", "60s")
		took := time.Since(start)
		t.Logf("kfed drain --wait took %s:\n%s", took, out)
		for _, want := range []string{"cluster cluster-1 drained", "rfc2136", "route53", "clouddns",
			"kept in cluster-1, as no other cluster can answer them: default/solo", "resolvers may still answer with cluster-1 for up to 30s"} {
			if !strings.Contains(out, want) {
				t.Errorf("kfed drain says\n%s\nwithout %q", out, want)
			}
		}
		after := map[string][]string{
			demoGlobal: all.of("default/demo", "cluster-2", "cluster-3"),
			demoRegion: all.of("default/demo", "cluster-2"),
			demoOwn:    nil,
			shop:       all.of("kfed-system/gateway.default.demo-gw", "cluster-2", "cluster-3"),
			solo:       before[solo],
		}
		// The providers are done when --wait returns; CoreDNS follows the
		// same DNSEndpoints by watch, within a moment.
		wantEverywhere(t, views(t), after, 3*time.Second)

		fedtest.WantCondition(t, fed, "cluster-1", kfedv1alpha1.ClusterDrained, "True", 10*time.Second)
		fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(soloSvc), kfedv1alpha1.ConditionDrained, "False", "keep cluster-1")
		fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(demoSvc), kfedv1alpha1.ConditionDrained, "True", "cluster-1")
		for _, p := range []string{"rfc2136", "route53", "clouddns"} {
			fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(demoSvc), kfedv1alpha1.ConditionProgrammedPrefix+p, "True", p+" holds the current records")
		}
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			return fedtest.WantEvent(ctx, f, soloSvc, publish.ReasonOnlyDrainedClusters)
		})
		// A Gateway holds at most eight conditions: the providers' are one.
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			var gw gatewayv1.Gateway
			if err := fed.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo-gw"}, &gw); err != nil {
				return err
			}
			for typ, want := range map[string]string{kfedv1alpha1.ConditionDrained: "True", kfedv1alpha1.ConditionDNSProgrammed: "True"} {
				if c := meta.FindStatusCondition(gw.Status.Conditions, typ); c == nil || string(c.Status) != want {
					return fmt.Errorf("demo-gw's %s is %+v, want %s", typ, c, want)
				}
			}
			return nil
		})
		status := run("status")
		if !strings.Contains(status, "DRAINED") || !strings.Contains(status, "since ") {
			t.Errorf("kfed status does not show cluster-1 drained:\n%s", status)
		}
	})

	t.Run("undrain --wait: every view answers as before", func(t *testing.T) {
		out := run("undrain", "cluster-1", "--wait", "--timeout", "60s")
		t.Logf("kfed undrain --wait:\n%s", out)
		if !strings.Contains(out, "resolvers may still answer without cluster-1 for up to 30s") {
			t.Errorf("kfed undrain says\n%s", out)
		}
		wantEverywhere(t, views(t), before, 3*time.Second)
		fedtest.WantCondition(t, fed, "cluster-1", kfedv1alpha1.ClusterDrained, "False", 10*time.Second)
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			c, err := fedtest.ServiceCondition(ctx, fed, client.ObjectKeyFromObject(soloSvc), kfedv1alpha1.ConditionDrained)
			if err != nil || c != nil {
				return fmt.Errorf("solo still has %s: %+v (%v)", kfedv1alpha1.ConditionDrained, c, err)
			}
			return nil
		})
	})
}

// wantEverywhere waits until every view answers each name with exactly
// want's addresses.
func wantEverywhere(t *testing.T, views map[string]func(string) []string, want map[string][]string, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(context.Context) error {
		var errs []string
		for view, answers := range views {
			for _, name := range followed {
				if got := answers(name); !slices.Equal(got, want[name]) {
					errs = append(errs, fmt.Sprintf("%s answers %s with %v, want %v", view, name, got, want[name]))
				}
			}
		}
		if len(errs) > 0 {
			slices.Sort(errs)
			return fmt.Errorf("%s", strings.Join(errs, "\n"))
		}
		return nil
	})
}

// clusterAddresses maps "namespace/DNSEndpoint" to each cluster's
// addresses in its table; clusterIPs maps each cluster IP of a Service's
// copy to its load balancer's address, which a member's own CoreDNS
// answers in its place.
type clusterAddresses struct {
	byKey      map[string]map[string][]string
	clusterIPs map[string]string
}

// addressesByCluster waits until demo's, solo's and demo-gw's DNSEndpoints
// have every cluster they are placed in, and reads their addresses.
func addressesByCluster(t *testing.T, fed client.Client) clusterAddresses {
	t.Helper()
	want := map[string]int{"default/demo": 3, "default/solo": 1, "kfed-system/gateway.default.demo-gw": 3}
	out := clusterAddresses{byKey: map[string]map[string][]string{}, clusterIPs: map[string]string{}}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		for key, n := range want {
			ns, name, _ := strings.Cut(key, "/")
			var ep extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ep); err != nil {
				return err
			}
			table, err := dnsendpoint.ReadClusters(&ep)
			if err != nil {
				return err
			}
			if len(table) != n {
				return fmt.Errorf("DNSEndpoint %s has %d clusters, want %d", key, len(table), n)
			}
			out.byKey[key] = map[string][]string{}
			for c, row := range table {
				if len(row.Addresses) == 0 {
					return fmt.Errorf("DNSEndpoint %s: cluster %s has no address", key, c)
				}
				for _, a := range row.Addresses {
					out.byKey[key][c] = append(out.byKey[key][c], a.String())
				}
				for _, ip := range row.ClusterIPs {
					out.clusterIPs[ip.String()] = row.Addresses[0].String()
				}
			}
		}
		return nil
	})
	return out
}

// of is the sorted addresses of the named clusters in DNSEndpoint key.
func (a clusterAddresses) of(key string, clusters ...string) []string {
	var out []string
	for _, c := range clusters {
		out = append(out, a.byKey[key][c]...)
	}
	slices.Sort(out)
	return out
}

// coreDNSAnswers are the A addresses CoreDNS at addr answers name with,
// a cluster IP as the load balancer address of its copy (alias), sorted;
// none for NXDOMAIN or NODATA.
func coreDNSAnswers(addr, name string, alias map[string]string) []string {
	r, err := fedtest.Query(addr, "udp", name+".", dns.TypeA)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, cmp.Or(alias[a.A.String()], a.A.String()))
		}
	}
	slices.Sort(out)
	return out
}
