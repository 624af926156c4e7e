package mcs

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// TestLoadBalancerExportGetsAGlobalNameThatFollowsHealthAndRouting runs on
// `kfed dev up`'s bed: a Service of type LoadBalancer exported in cluster-1
// and cluster-2 gets the federation's name shop.default.dev.svc.kfed.test,
// answered in every member's CoreDNS (a member's own cluster by its
// cluster IP, the others by their load balancers); a load balancer that
// refuses connections leaves the answers until it comes back; the oldest export's routing annotations
// route the name; kfed drain takes a cluster off it, in every member's
// CoreDNS and at BIND and the Route53 and Cloud DNS local endpoints (each
// published to by a DNS sync of its own), and undrain brings it back; and
// it is NXDOMAIN once both exports go.
//
// It is one function over 80 lines: its steps share a bed that takes a
// minute to start, and read in order as the story they check.
func TestLoadBalancerExportGetsAGlobalNameThatFollowsHealthAndRouting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	d, clients, bin := startDevBed(t)
	providers := startProviders(t, d)
	exporters := []string{"cluster-1", "cluster-2"}
	for _, m := range exporters {
		for _, o := range []client.Object{
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "shop"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
			},
			&mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}},
		} {
			if err := clients[m].Create(ctx, o); err != nil {
				t.Fatalf("creating %T in %s: %v", o, m, err)
			}
		}
		time.Sleep(1100 * time.Millisecond) // cluster-1's export is the older by a second
	}
	// Each exporter's load balancer and cluster IP.
	lb, clusterIP := map[string]string{}, map[string]string{}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		for _, m := range exporters {
			var s corev1.Service
			if err := clients[m].Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &s); err != nil {
				return err
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("no load balancer address in %s yet", m)
			}
			lb[m], clusterIP[m] = s.Status.LoadBalancer.Ingress[0].IP, s.Spec.ClusterIP
		}
		return nil
	})
	const global = "shop.default.dev.svc.kfed.test."
	// everywhere checks that every member's CoreDNS answers the name with
	// the clusters up: its own by cluster IP, the others by load balancer.
	everywhere := func(up ...string) func(context.Context) error {
		return func(context.Context) error {
			for i, m := range d.Members {
				var want []string
				for _, c := range up {
					if c == m.Name {
						want = append(want, "A "+clusterIP[c])
					} else {
						want = append(want, "A "+lb[c])
					}
				}
				if err := wantA(d.DNS[i], global, want); err != nil {
					return fmt.Errorf("%s's CoreDNS: %w", m.Name, err)
				}
			}
			return nil
		}
	}
	start := time.Now()
	framework.Eventually(t, 60*time.Second, everywhere("cluster-1", "cluster-2"))
	t.Logf("the global name answered both exports in every member %v after their load balancers had addresses", time.Since(start).Round(10*time.Millisecond))
	wantCondition(ctx, t, clients["cluster-2"], kfedv1alpha1.ConditionGlobalName, "True", "answers clusters cluster-1, cluster-2")
	// The dev bed's load balancers are loopback addresses, which no
	// EndpointSlice may hold: the import is made without them.
	wantCondition(ctx, t, clients["cluster-2"], string(mcsv1beta1.ServiceExportConditionReady), "True", "imported in clusters cluster-1, cluster-2, cluster-3")

	t.Run("a load balancer that refuses connections leaves the answers, and comes back", func(t *testing.T) {
		setAnnotation(ctx, t, clients["cluster-2"], &corev1.Service{}, loopbacklb.FailureAnnotation, "refuse")
		defer setAnnotation(ctx, t, clients["cluster-2"], &corev1.Service{}, loopbacklb.FailureAnnotation, "")
		framework.Eventually(t, 30*time.Second, everywhere("cluster-1"))
		wantCondition(ctx, t, clients["cluster-1"], kfedv1alpha1.ConditionGlobalName, "True", "unhealthy: cluster-2")
		setAnnotation(ctx, t, clients["cluster-2"], &corev1.Service{}, loopbacklb.FailureAnnotation, "")
		framework.Eventually(t, 30*time.Second, everywhere("cluster-1", "cluster-2"))
	})

	t.Run("kfed drain takes a cluster's export off the name, and undrain brings it back", func(t *testing.T) {
		kfed := func(args ...string) {
			t.Helper()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "kfed"), append(args, "--kubeconfig", d.Kubeconfig, "--context", "federation")...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kfed %v: %v\n%s", args, err, out)
			}
		}
		// atProviders checks that every provider holds the name with the
		// load balancers of the clusters up.
		atProviders := func(up ...string) func(context.Context) error {
			return func(context.Context) error {
				var want []string
				for _, c := range up {
					want = append(want, lb[c])
				}
				slices.Sort(want)
				for name, answers := range providers {
					if got := answers(strings.TrimSuffix(global, ".")); !slices.Equal(got, want) {
						return fmt.Errorf("%s holds %s with %v, want %v", name, global, got, want)
					}
				}
				return nil
			}
		}
		framework.Eventually(t, 30*time.Second, atProviders("cluster-1", "cluster-2"))
		kfed("drain", "cluster-1", "--wait", "--timeout", "60s")
		// --wait returned: every provider has it, and every member's
		// CoreDNS within its watch.
		framework.Eventually(t, 3*time.Second, atProviders("cluster-2"))
		framework.Eventually(t, 10*time.Second, everywhere("cluster-2"))
		kfed("undrain", "cluster-1", "--wait", "--timeout", "60s")
		framework.Eventually(t, 3*time.Second, atProviders("cluster-1", "cluster-2"))
		framework.Eventually(t, 10*time.Second, everywhere("cluster-1", "cluster-2"))
	})

	t.Run("the oldest export's routing annotations route the name", func(t *testing.T) {
		// The younger export's annotation changes nothing, and is reported.
		setAnnotation(ctx, t, clients["cluster-2"], &mcsv1beta1.ServiceExport{}, "kfed.io/routing", "proximity")
		wantCondition(ctx, t, clients["cluster-2"], kfedv1alpha1.ConditionGlobalName, "True", "exports in clusters cluster-2 differ from the oldest export's, cluster cluster-1's")
		setAnnotation(ctx, t, clients["cluster-1"], &mcsv1beta1.ServiceExport{}, "kfed.io/failover-order", "cluster-2,cluster-1")
		setAnnotation(ctx, t, clients["cluster-1"], &mcsv1beta1.ServiceExport{}, "kfed.io/routing", "failover")
		framework.Eventually(t, 30*time.Second, everywhere("cluster-2"))
	})

	for _, m := range exporters {
		if err := clients[m].Delete(ctx, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, 60*time.Second, func(context.Context) error {
		for i := range d.DNS {
			if err := fedtest.WantRcode(d.DNS[i], global, dns.RcodeNameError); err != nil {
				return fmt.Errorf("cluster-%d's CoreDNS, once both exports went: %w", i+1, err)
			}
		}
		return nil
	})
}

// startProviders publishes the dev bed's DNSEndpoints to BIND and to the
// Route53 and Cloud DNS local endpoints, each through a DNS sync
// controller of its own as kfed-controller runs it, and returns how to
// read each one's A values at a name, sorted.
func startProviders(t *testing.T, d *devenv.Dev) map[string]func(name string) []string {
	t.Helper()
	const zone = "kfed.test"
	srv := bindtest.Start(t, zone)
	cp := fedtest.ControlPlane{Config: d.ControlPlane.Config, Scheme: framework.NewScheme(t), Federation: "dev"}
	pf := fedtest.BindProvider(srv, zone, cp.Federation)
	prov, planner, err := pf.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fedtest.StartDNSSync(t, cp, prov, planner)
	r53, r53Zone := fedtest.StartRoute53Sync(t, cp, zone)
	gcp := fedtest.StartCloudDNSSync(t, cp, zone)
	return map[string]func(string) []string{
		"BIND":    func(name string) []string { return srv.Answers(t, name, dns.TypeA) },
		"Route53": func(name string) []string { return fedtest.Route53Targets(r53.RecordSets(r53Zone), name) },
		"Cloud DNS": func(name string) []string {
			return fedtest.CloudDNSTargets(gcp.RecordSets("kfed-test", "kfed-test"), name)
		},
	}
}

// wantA checks that the server at addr answers name's A query with exactly
// want ("A 1.2.3.4" each), in any order.
func wantA(addr, name string, want []string) error {
	var ips []string
	for _, w := range want {
		ips = append(ips, strings.TrimPrefix(w, "A "))
	}
	r, err := fedtest.Query(addr, "udp", name, dns.TypeA)
	if err != nil {
		return err
	}
	var got []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			got = append(got, a.A.String())
		}
	}
	if strings.Join(fedtest.Sorted(got), ",") != strings.Join(fedtest.Sorted(ips), ",") {
		return fmt.Errorf("%s answered %v (%s), want %v", name, got, dns.RcodeToString[r.Rcode], ips)
	}
	return nil
}

// setAnnotation sets (or, with "", removes) an annotation of default/shop
// of obj's kind in a member, as a user would.
func setAnnotation(ctx context.Context, t *testing.T, c client.Client, obj client.Object, key, value string) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, obj); err != nil {
			return err
		}
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if value == "" {
			delete(a, key)
		} else {
			a[key] = value
		}
		obj.SetAnnotations(a)
		return c.Update(ctx, obj)
	})
}

// wantCondition waits for the export default/shop in a member to have the
// condition typ with status and a message holding msgHas.
func wantCondition(ctx context.Context, t *testing.T, c client.Client, typ, status, msgHas string) {
	t.Helper()
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var se mcsv1beta1.ServiceExport
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, &se); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(se.Status.Conditions, typ)
		if cond == nil || string(cond.Status) != status || !strings.Contains(cond.Message, msgHas) {
			return fmt.Errorf("condition %s: %+v, want %s with %q", typ, cond, status, msgHas)
		}
		return nil
	})
}
