package dns

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
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// dnsSyncRestoresARecordRemovedBehindItsBackAtRelistThoughNothingChanged
// (TestDNSSyncRestoresARecordRemovedBehindItsBackAtRelistThoughNothingChanged):
// a pass over a federation in which no DNSEndpoint changed is skipped while
// the sync's cached listing is trusted; once it is not (Relist), the zone is
// listed and planned again, so a record removed behind kfed's back comes
// back though nothing in the control plane changed.
func dnsSyncRestoresARecordRemovedBehindItsBackAtRelistThoughNothingChanged(t *testing.T, f *framework.Federation) {
	const zone, ns = "kfed.test", "relist"
	b := newDNSSyncBed(t, f, zone)
	srv, ctx := b.bind, b.ctx
	const relist = 4 * time.Second
	sc := &dnssync.Controller{
		Syncer: &dnssync.Syncer{Provider: b.prov, Planner: dnsprovider.Planner{Registry: b.reg}, Relist: relist},
		Fed:    b.cl, Cache: b.cache, Federation: "fed", Interval: 200 * time.Millisecond, Metrics: b.metrics,
		Logger: textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(framework.LogWriter(t)))),
	}
	b.start(sc)

	const name = "web." + ns + ".fed.svc." + zone
	ep := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{
			kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: "fed",
		}},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: name, RecordType: "A", Targets: []string{"127.1.0.1"}, RecordTTL: 60},
		}},
	}
	fedtest.Create(t, f.Client("federation"), framework.Namespace(ns))
	fedtest.DeleteAtEnd(t, f.Client("federation"), ep.DeepCopy())
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
		if err := b.cl.Get(ctx, client.ObjectKeyFromObject(ep), ep); err != nil {
			return err
		}
		if len(ep.Status.Publishers) != 1 || ep.Status.Publishers[0].ObservedGeneration != ep.Generation {
			return fmt.Errorf("publishers %+v", ep.Status.Publishers)
		}
		return nil
	})
	time.Sleep(time.Second) // several passes

	zones, err := b.prov.Zones(ctx)
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

// dnsSyncBed is a federation's control plane (a test bed's, whose members
// it leaves alone), a client that reads it through a cache, and a BIND of
// the test's own serving a zone through kfed's RFC 2136 provider with owner
// ID "fed": what a DNS sync controller, the test's to configure, needs. The
// cache and the controller stop when the test ends.
type dnsSyncBed struct {
	f       *framework.Federation
	bind    *bindtest.Server
	cache   cache.Cache
	cl      client.Client
	prov    *rfc2136.Provider
	reg     dnsprovider.Registry
	metrics *dnssync.Metrics
	ctx     context.Context
	wg      sync.WaitGroup
}

func newDNSSyncBed(t *testing.T, f *framework.Federation, zone string) *dnsSyncBed {
	t.Helper()
	b := &dnsSyncBed{bind: bindtest.Start(t, zone), f: f}
	cfg := b.f.ControlPlane.Config
	var err error
	if b.cache, err = cache.New(cfg, cache.Options{Scheme: b.f.Scheme}); err != nil {
		t.Fatal(err)
	}
	if b.cl, err = client.New(cfg, client.Options{Scheme: b.f.Scheme, Cache: &client.CacheOptions{Reader: b.cache}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.ctx = ctx
	t.Cleanup(func() { cancel(); b.wg.Wait() })
	b.wg.Go(func() { _ = b.cache.Start(ctx) })
	b.prov, err = rfc2136.New(rfc2136.Config{Server: b.bind.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: b.bind.SecretFile})
	if err != nil {
		t.Fatal(err)
	}
	if b.reg, err = dnsprovider.NewRegistry("fed", ""); err != nil {
		t.Fatal(err)
	}
	if b.metrics, err = dnssync.NewMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	return b
}

// start runs sc until the test ends.
func (b *dnsSyncBed) start(sc *dnssync.Controller) {
	b.wg.Go(func() { _ = sc.Start(b.ctx) })
}
