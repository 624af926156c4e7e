package clouddns_test

import (
	"context"
	"testing"

	"github.com/kfed-io/kfed/dnsprovider"
	"github.com/kfed-io/kfed/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/test/clouddnsfake"
)

// BenchmarkPublish1000Services publishes 1,000 federated Services × 3
// clusters (3,000 weighted record sets, which Cloud DNS holds as 1,000
// record sets with weighted round robin policies, their 1,000 identifier
// records, and 1,000 ownership marks) to an empty managed zone, then
// changes one endpoint against the cached listing, as the sync controller
// does. It reports requests for each, next to what one request per record
// set would cost.
func BenchmarkPublish1000Services(b *testing.B) {
	ctx := context.Background()
	desired := services(1000)
	var publishReq, changeReq, records float64
	for b.Loop() {
		b.StopTimer()
		fake := clouddnsfake.New()
		fake.AddZone(project, "kfed-test", "kfed.test.")
		p, err := clouddns.New(service(b, fake), clouddns.Config{Project: project, Zones: []string{"kfed-test"}})
		if err != nil {
			b.Fatal(err)
		}
		zones, err := p.Zones(ctx)
		if err != nil {
			b.Fatal(err)
		}
		z := zones[0]
		b.StartTimer()

		before := p.Stats()
		plan, err := dnsprovider.Sync(ctx, p, z, planner(b), desired)
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
		changed := services(1000)
		changed[1500].Targets = []string{"10.9.9.9"}
		b.StartTimer()
		before = p.Stats()
		if err := dnsprovider.Apply(ctx, z, planner(b).Plan(z.Name(), p.Adjust(changed), current)); err != nil {
			b.Fatal(err)
		}
		changeReq = float64(p.Stats().Requests - before.Requests)
		b.StopTimer()
		fake.Close()
		b.StartTimer()
	}
	b.ReportMetric(publishReq, "publish-requests")
	b.ReportMetric(records, "one-per-record-requests")
	b.ReportMetric(changeReq, "change-requests")
}
