package gateways

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/test/framework"
)

// federatedGatewayHostnameAddress (TestFederatedGatewayHostnameAddress): a
// member whose Gateway gives its address as a hostname (an AWS NLB's name; here
// the loopback implementation told so, the name served by a real CoreDNS) has
// the name resolved by kfed every sync: its addresses are published under the
// Gateway's hostname beside the other clusters', the name kept in the cluster
// table (for providers that alias it) and in the federated Gateway's status.
// When the name moves, the records follow; when it stops resolving, the cluster
// keeps the addresses it had and the Gateway says why. cluster-1 names its
// address, the other members give IPs.
func federatedGatewayHostnameAddress(t *testing.T, f *framework.Federation) {

	// The load balancers' zone, elb.test, in a CoreDNS of its own; the
	// file plugin reloads the zone when its serial grows.
	zoneFile := filepath.Join(t.TempDir(), "elb.test.zone")
	serial := 0
	setZone := func(records ...string) {
		t.Helper()
		serial++
		zone := fmt.Sprintf("$ORIGIN elb.test.\n@ 1 IN SOA ns.elb.test. admin.elb.test. %d 60 60 600 1\n@ 1 IN NS ns.elb.test.\nns 1 IN A 127.0.0.1\n%s\n",
			serial, strings.Join(records, "\n"))
		if err := os.WriteFile(zoneFile, []byte(zone), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setZone()
	ctx := context.Background()
	elb, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-elb", Zone: "elb.test.",
		Corefile: fmt.Sprintf("elb.test {\n    bind 127.0.0.1\n    file %s {\n        reload 200ms\n    }\n}\n", zoneFile),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(elb.Stop)
	dialer := &net.Dialer{Timeout: time.Second}
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, elb.Addr)
	}}
	startController(t, f, manager.Options{Resolver: resolver, HostnameResync: time.Second})

	fed := f.Client("federation")
	const ns = "named"
	front := fedtest.FederatedGateway(ns, "front", "shop.example.com")
	deleteAtEnd(t, f, front)
	fedtest.Create(t, fed, framework.Namespace(ns), front)
	all := fedtest.PublishedAddresses(t, f, "gateway."+ns+".front", "shop.example.com", len(f.Members))

	// cluster-1's Gateway now gives the name nlb-1.elb.test, which
	// resolves to the address it listens on.
	c1 := f.Client("cluster-1")
	var gw gatewayv1.Gateway
	if err := c1.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &gw); err != nil {
		t.Fatal(err)
	}
	if len(gw.Status.Addresses) != 1 {
		t.Fatalf("cluster-1's Gateway has addresses %v", gw.Status.Addresses)
	}
	own := gw.Status.Addresses[0].Value
	setZone("nlb-1 1 IN A " + own)
	patch := client.MergeFrom(gw.DeepCopy())
	gw.Annotations[loopbackgw.HostnameAnnotation] = "nlb-1.elb.test"
	if err := c1.Patch(ctx, &gw, patch); err != nil {
		t.Fatal(err)
	}
	// published waits until cluster-1's row has the name and addrs, and the
	// hostname's A record the other clusters' addresses and addrs.
	published := func(addrs ...string) {
		t.Helper()
		want := slices.Sorted(slices.Values(append(slices.DeleteFunc(slices.Clone(all), func(a string) bool { return a == own }), addrs...)))
		// Generous: on a machine also compiling (CI from empty caches) a
		// resync, reconcile and write took over 30 s once.
		framework.Eventually(t, 90*time.Second, func(ctx context.Context) error {
			var ep extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "gateway." + ns + ".front"}, &ep); err != nil {
				return err
			}
			table, err := dnsendpoint.ReadClusters(&ep)
			if err != nil {
				return err
			}
			row := table["cluster-1"]
			if row == nil || row.Hostname != "nlb-1.elb.test" || fmt.Sprint(row.Addresses) != fmt.Sprint(addrs) {
				return fmt.Errorf("cluster-1's row %+v, want hostname nlb-1.elb.test at %v", row, addrs)
			}
			if len(ep.Spec.Endpoints) != 1 || !slices.Equal(ep.Spec.Endpoints[0].Targets, want) {
				return fmt.Errorf("records %v, want shop.example.com A %v", ep.Spec.Endpoints, want)
			}
			return nil
		})
	}
	published(own)
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var cur gatewayv1.Gateway
		if err := fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &cur); err != nil {
			return err
		}
		var names, ips int
		for _, a := range cur.Status.Addresses {
			switch {
			case a.Type != nil && *a.Type == gatewayv1.HostnameAddressType && a.Value == "nlb-1.elb.test":
				names++
			case a.Type != nil && *a.Type == gatewayv1.IPAddressType && a.Value != own:
				ips++
			}
		}
		if names != 1 || ips != len(f.Members)-1 || len(cur.Status.Addresses) != len(f.Members) {
			return fmt.Errorf("the federated Gateway's addresses %v: want cluster-1's name and the other members' IPs", cur.Status.Addresses)
		}
		return nil
	})

	// The load balancer moves: the next sync publishes where it went.
	setZone("nlb-1 1 IN A 127.1.200.99")
	published("127.1.200.99")

	// The name stops resolving: cluster-1 keeps the address it had, and the
	// Gateway says why.
	setZone()
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var cur gatewayv1.Gateway
		if err := fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, kfedv1alpha1.ConditionPlaced)
		if c == nil || c.Status != "False" || !strings.Contains(c.Message, "resolving the address nlb-1.elb.test of cluster cluster-1") {
			return fmt.Errorf("condition %s: %+v", kfedv1alpha1.ConditionPlaced, c)
		}
		return nil
	})
	published("127.1.200.99")
}
