package dns

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsroute53 "github.com/aws/aws-sdk-go-v2/service/route53"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/route53"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/route53fake"
)

// twoProvidersNeverWipeEachOthersPublishStatus
// (TestTwoProvidersNeverWipeEachOthersPublishStatus): two providers' sync
// controllers (RFC 2136 to BIND and Route53 to its local endpoint) publish the same DNSEndpoints at once, against a real API
// server, through rounds of changes to every object: neither ever drops or
// rolls back the other's entry of status.publishers, as a merge patch of the
// whole list from a cache that had not seen the other's write did.
func twoProvidersNeverWipeEachOthersPublishStatus(t *testing.T, f *framework.Federation) {
	const zone, ns = "kfed.test", "publishers"
	b := newDNSSyncBed(t, f, zone)
	ctx := b.ctx
	r53 := route53fake.New()
	t.Cleanup(r53.Close)
	zoneID := r53.AddZone(zone, false)
	sdk := awsroute53.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")},
		func(o *awsroute53.Options) { o.BaseEndpoint = aws.String(r53.URL) })
	direct, err := client.NewWithWatch(f.ControlPlane.Config, client.Options{Scheme: f.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(framework.LogWriter(t))))
	for _, prov := range []dnsprovider.Provider{b.prov, route53.New(sdk, route53.Config{ZoneIDs: []string{zoneID}, RequestsPerSecond: 1000})} {
		b.start(&dnssync.Controller{
			Syncer: &dnssync.Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: b.reg}},
			Fed:    b.cl, APIReader: direct, Cache: b.cache, Federation: "fed", Metrics: b.metrics,
			Interval: 200 * time.Millisecond, Debounce: 50 * time.Millisecond, Logger: logger.WithValues("provider", prov.Name()),
		})
	}

	// Every status each object goes through, in order: an entry once there
	// must stay, with a generation that never goes back.
	w, err := direct.Watch(ctx, &extdnsv1alpha1.DNSEndpointList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var violations []string
	seen := map[string]map[string]int64{} // object → provider → generation
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			ep, ok := ev.Object.(*extdnsv1alpha1.DNSEndpoint)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			mu.Lock()
			have := map[string]int64{}
			for _, p := range ep.Status.Publishers {
				have[p.Provider] = p.ObservedGeneration
			}
			if seen[ep.Name] == nil {
				seen[ep.Name] = map[string]int64{}
			}
			for prov, gen := range seen[ep.Name] {
				if got, ok := have[prov]; !ok || got < gen {
					violations = append(violations, fmt.Sprintf("%s at resourceVersion %s: %s's entry went from generation %d to %v (%+v)",
						ep.Name, ep.ResourceVersion, prov, gen, got, ep.Status.Publishers))
				}
			}
			for prov, gen := range have {
				seen[ep.Name][prov] = max(seen[ep.Name][prov], gen)
			}
			mu.Unlock()
		}
	}()

	const objects, rounds = 30, 4
	fed := f.Client("federation")
	fedtest.Create(t, fed, framework.Namespace(ns))
	eps := make([]client.Object, objects)
	for i := range objects {
		eps[i] = &extdnsv1alpha1.DNSEndpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web" + strconv.Itoa(i), Labels: map[string]string{
				kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: "fed",
			}},
			Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
				{DNSName: fmt.Sprintf("web%d.%s.fed.svc.%s", i, ns, zone), RecordType: "A", Targets: []string{"127.1.0.1"}, RecordTTL: 60},
			}},
		}
	}
	fedtest.DeleteAtEnd(t, fed, eps...)
	fedtest.Create(t, fed, eps...)
	for round := 1; round <= rounds; round++ {
		if round > 1 {
			for i := range objects {
				var ep extdnsv1alpha1.DNSEndpoint
				if err := fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web" + strconv.Itoa(i)}, &ep); err != nil {
					t.Fatal(err)
				}
				ep.Spec.Endpoints[0].Targets = []string{fmt.Sprintf("127.1.0.%d", round)}
				if err := fed.Update(ctx, &ep); err != nil {
					t.Fatal(err)
				}
			}
		}
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			var list extdnsv1alpha1.DNSEndpointList
			if err := direct.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, ep := range list.Items {
				if len(ep.Status.Publishers) != 2 {
					return fmt.Errorf("%s: publishers %+v", ep.Name, ep.Status.Publishers)
				}
				for _, p := range ep.Status.Publishers {
					if p.ObservedGeneration != ep.Generation || p.Error != "" {
						return fmt.Errorf("%s generation %d: %+v", ep.Name, ep.Generation, p)
					}
				}
			}
			return nil
		})
	}
	w.Stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	t.Logf("%d objects through %d rounds: %d entries dropped or rolled back", objects, rounds, len(violations))
}
