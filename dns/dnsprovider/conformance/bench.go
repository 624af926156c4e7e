package conformance

import (
	"context"
	"fmt"
	"testing"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// Services returns the desired state of n federated Services in zone, each
// published by 3 clusters: n names × 3 weighted A record sets.
func Services(n int, zone string) []dnsprovider.RecordSet {
	var out []dnsprovider.RecordSet
	for i := range n {
		for c := range 3 {
			out = append(out, dnsprovider.RecordSet{
				Name: fmt.Sprintf("svc%d.default.fed.svc.%s", i, zone), Type: "A",
				SetIdentifier: fmt.Sprintf("cluster-%d", c+1), Weight: 1,
				Targets:  []string{fmt.Sprintf("10.%d.%d.%d", c, i/250, i%250+1)},
				Resource: fmt.Sprintf("default/svc%d", i),
			})
		}
	}
	return out
}

// BenchmarkPublish publishes 1,000 federated Services × 3 clusters to an
// empty zone of a fresh target, then changes one endpoint against the zone's
// listing, as the sync controller does with its cache. It reports the
// requests each took, next to one request per record-set change. The same
// body runs for every provider, so their figures compare.
func BenchmarkPublish(b *testing.B, newTarget func(b *testing.B) Target) {
	ctx := context.Background()
	reg, err := dnsprovider.NewRegistry("bench", "")
	if err != nil {
		b.Fatal(err)
	}
	pl := dnsprovider.Planner{Registry: reg}
	var publishReq, changeReq, records float64
	for b.Loop() {
		b.StopTimer()
		t := newTarget(b)
		p, z := t.Provider, t.Zone
		desired := Services(1000, z.Name())
		b.StartTimer()

		before := p.Stats()
		plan, err := dnsprovider.Sync(ctx, p, z, pl, desired)
		if err != nil {
			b.Fatal(err)
		}
		publishReq = float64(p.Stats().Requests - before.Requests)
		records = float64(len(plan.Changes))

		b.StopTimer()
		current, err := z.Records(ctx)
		if err != nil {
			b.Fatal(err)
		}
		desired[1500].Targets = []string{"10.9.9.9"}
		b.StartTimer()
		before = p.Stats()
		if err := dnsprovider.Apply(ctx, z, pl.Plan(z.Name(), p.Adjust(desired), current)); err != nil {
			b.Fatal(err)
		}
		changeReq = float64(p.Stats().Requests - before.Requests)
	}
	b.ReportMetric(publishReq, "publish-requests")
	b.ReportMetric(records, "one-per-record-requests")
	b.ReportMetric(changeReq, "change-requests")
}

// BenchmarkAdjust runs p's Adjust, which every sync runs on every desired
// record set of a zone, on 1,000 federated Services × 3 clusters: weighted,
// and routed by proximity (the clusters in New York, Frankfurt and Tokyo).
func BenchmarkAdjust(b *testing.B, p dnsprovider.Provider) {
	places := []dnsprovider.Location{{Latitude: 40.71, Longitude: -74.01}, {Latitude: 50.11, Longitude: 8.68}, {Latitude: 35.68, Longitude: 139.69}}
	for _, proximity := range []bool{false, true} {
		desired := Services(1000, "kfed.test")
		if proximity {
			for i := range desired {
				desired[i].Location = &places[i%3]
			}
		}
		b.Run(fmt.Sprintf("proximity=%v", proximity), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Adjust(desired)
			}
		})
	}
}
