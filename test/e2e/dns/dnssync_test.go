package dns

import (
	"context"
	"fmt"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
)

// dnsRequests reads kfed_dns_requests_total for provider from the process's
// metrics registry.
func dnsRequests(t *testing.T, provider string) float64 {
	return registryValue(t, "kfed_dns_requests_total", "provider", provider)
}

// registryValue is the value of the counter or gauge name whose label is
// value, as the in-process controller's registry reports it; 0 when there is
// no such series.
func registryValue(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// dnsSyncControllerPublishesToBINDAndIsQuietInSteadyState
// (TestDNSSyncControllerPublishesToBINDAndIsQuietInSteadyState): the
// controller's DNS sync publishes a federated Service to BIND, reports a
// name someone else holds on the Service, and sends nothing once nothing
// changes.
func dnsSyncControllerPublishesToBINDAndIsQuietInSteadyState(t *testing.T, f *framework.Federation) {
	const zone = "kfed.test"
	srv := startControllerWithBIND(t, f, zone)
	fed := f.Client("federation")
	ctx := context.Background()
	svc := fedtest.FederatedService("default", "shop")
	heldSvc := fedtest.FederatedService("default", "held")
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc), client.ObjectKeyFromObject(heldSvc))
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	global := "shop.default.fed.svc." + zone
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var n int
		for _, rr := range srv.Query(t, global, dns.TypeA) {
			if rr.Header().Rrtype == dns.TypeA {
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("BIND answers %d A records for %s, want 2", n, global)
		}
		return nil
	})
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &ep); err != nil {
			return err
		}
		if ep.Status.ObservedGeneration != ep.Generation {
			return fmt.Errorf("published generation %d of %d", ep.Status.ObservedGeneration, ep.Generation)
		}
		return nil
	})

	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), kfedv1alpha1.ConditionDNSPublished, "True", "published to rfc2136")

	// A second Service whose per-cluster name is held by someone else's
	// record: the rest is published, the Service says which name was left.
	held := "cluster-1.held.default.fed.svc." + zone
	prov, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: srv.SecretFile})
	if err != nil {
		t.Fatal(err)
	}
	zones, err := prov.Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	theirs := dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: held, Type: "A", TTL: 300, Targets: []string{"192.0.2.77"}})
	cs := zones[0].NewChangeset()
	cs.Add(dnsprovider.Change{Action: dnsprovider.Create, New: theirs, Group: held})
	if err := cs.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	// The syncer trusts its cached listing for an hour: this outside write is
	// noticed when kfed's own write to that name fails its precondition.
	if err := fed.Create(ctx, heldSvc); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(heldSvc), kfedv1alpha1.ConditionDNSPublished, "False", "rfc2136 leaves "+held+" alone")
	if got := srv.Answers(t, held, dns.TypeA); len(got) != 1 || got[0] != "192.0.2.77" {
		t.Errorf("the unowned record changed: %v", got)
	}
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error { return fedtest.WantEvent(ctx, f, heldSvc, "DNSConflict") })

	// Steady state: several sync intervals pass without a single request.
	before := dnsRequests(t, "rfc2136")
	if before == 0 {
		t.Fatal("kfed_dns_requests_total not exported")
	}
	time.Sleep(3 * time.Second)
	if after := dnsRequests(t, "rfc2136"); after != before {
		t.Errorf("nothing changed, yet %v requests were sent in 6 sync intervals", after-before)
	}
}
