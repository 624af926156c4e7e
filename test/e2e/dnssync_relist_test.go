package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dnsprovider"
	"github.com/kfed-io/kfed/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/dnsprovider/rfc2136/bindtest"
	"github.com/kfed-io/kfed/dnssync"
	"github.com/kfed-io/kfed/test/framework"
)

// A pass over a federation in which no DNSEndpoint changed is skipped while
// the sync's cached listing is trusted; once it is not (Relist), the zone is
// listed and planned again, so a record removed behind kfed's back comes
// back though nothing in the control plane changed.
func TestDNSSyncRestoresARecordRemovedBehindItsBackAtRelistThoughNothingChanged(t *testing.T) {
	const zone = "kfed.test"
	srv := bindtest.Start(t, zone)
	f := framework.Start(t, framework.Members(0))
	cfg := f.ControlPlane.Config
	c, err := cache.New(cfg, cache.Options{Scheme: f.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: f.Scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = c.Start(ctx) })

	prov, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: srv.SecretFile})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := dnsprovider.NewRegistry("fed", "")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := dnssync.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	const relist = 4 * time.Second
	sc := &dnssync.Controller{
		Syncer: &dnssync.Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: reg}, Relist: relist},
		Fed:    cl, Cache: c, Federation: "fed", Interval: 200 * time.Millisecond, Metrics: metrics,
		Logger: textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(framework.LogWriter(t)))),
	}
	wg.Go(func() { _ = sc.Start(ctx) })

	const name = "web.default.fed.svc." + zone
	ep := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{
			kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: "fed",
		}},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: name, RecordType: "A", Targets: []string{"127.1.0.1"}, RecordTTL: 60},
		}},
	}
	if err := f.Client("federation").Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
	answers := func(want ...string) func(context.Context) error {
		return func(context.Context) error {
			if got := srv.Answers(t, name, dns.TypeA); !slices.Equal(got, want) {
				return fmt.Errorf("BIND answers %s A %v, want %v", name, got, want)
			}
			return nil
		}
	}
	framework.Eventually(t, 30*time.Second, answers("127.1.0.1"))
	// Its publish status written, every later pass finds nothing changed.
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(ep), ep); err != nil {
			return err
		}
		if len(ep.Status.Publishers) != 1 || ep.Status.Publishers[0].ObservedGeneration != ep.Generation {
			return fmt.Errorf("publishers %+v", ep.Status.Publishers)
		}
		return nil
	})
	time.Sleep(time.Second) // several passes

	zones, err := prov.Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs := zones[0].NewChangeset()
	cs.Add(dnsprovider.Change{Action: dnsprovider.Delete, Group: name,
		Old: dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: name, Type: "A", TTL: 60, Targets: []string{"127.1.0.1"}})})
	if err := cs.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	if err := answers()(ctx); err != nil {
		t.Fatalf("the record was not removed: %v", err)
	}
	framework.Eventually(t, 3*relist, answers("127.1.0.1"))
	t.Logf("the record was back %v after its removal (Relist %v)", time.Since(removed).Round(time.Millisecond), relist)
}
