package rfc2136_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kfed-io/kfed/dnsprovider"
	"github.com/kfed-io/kfed/dnsprovider/rfc2136/bindtest"
)

// BenchmarkPublish1000Services publishes 1,000 federated Services × 3
// clusters to a real BIND (merged per name: 1,000 A record sets and 1,000
// marks), then changes one endpoint against the cached listing. It reports
// UPDATE messages for each, next to one message per record set.
func BenchmarkPublish1000Services(b *testing.B) {
	ctx := context.Background()
	srv := bindtest.Start(b, zone)
	p, z := newProvider(b, srv, 0)
	reg, _ := dnsprovider.NewRegistry("bench", "")
	pl := dnsprovider.Planner{Registry: reg}
	var desired []dnsprovider.RecordSet
	for i := range 1000 {
		for c := range 3 {
			desired = append(desired, dnsprovider.RecordSet{
				Name: fmt.Sprintf("svc%d.default.fed.svc.%s", i, zone), Type: "A",
				SetIdentifier: fmt.Sprintf("cluster-%d", c+1), Weight: 1,
				Targets: []string{fmt.Sprintf("10.%d.%d.%d", c, i/250, i%250+1)},
			})
		}
	}
	var publishReq, changeReq, records float64
	for b.Loop() {
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
		changed := append([]dnsprovider.RecordSet(nil), desired...)
		changed[1500].Targets = []string{"10.9.9.9"}
		b.StartTimer()
		before = p.Stats()
		if err := dnsprovider.Apply(ctx, z, pl.Plan(z.Name(), p.Adjust(changed), current)); err != nil {
			b.Fatal(err)
		}
		changeReq = float64(p.Stats().Requests - before.Requests)

		b.StopTimer()
		if _, err := dnsprovider.Sync(ctx, p, z, pl, nil); err != nil { // back to empty
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(publishReq, "publish-requests")
	b.ReportMetric(records, "one-per-record-requests")
	b.ReportMetric(changeReq, "change-requests")
}
