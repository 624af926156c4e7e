package clouddns_test

import (
	"context"
	"testing"

	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/dns/dnsprovider/conformance"
	"github.com/kfed-io/kfed/test/clouddnsfake"
)

// BenchmarkPublish1000Services runs conformance.BenchmarkPublish against
// the Cloud DNS endpoint. Cloud DNS holds the 3,000 weighted record sets as
// 1,000 record sets with weighted round robin policies plus their 1,000
// identifier records.
func BenchmarkPublish1000Services(b *testing.B) {
	conformance.BenchmarkPublish(b, func(b *testing.B) conformance.Target {
		fake := clouddnsfake.New()
		b.Cleanup(fake.Close)
		fake.AddZone(project, "kfed-test", "kfed.test.")
		p, err := clouddns.New(service(b, fake), clouddns.Config{Project: project, Zones: []string{"kfed-test"}})
		if err != nil {
			b.Fatal(err)
		}
		zones, err := p.Zones(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return conformance.Target{Provider: p, Zone: zones[0], Weighted: true}
	})
}

// BenchmarkAdjust1000Services is conformance.BenchmarkAdjust for Cloud DNS.
func BenchmarkAdjust1000Services(b *testing.B) {
	p, err := clouddns.New(nil, clouddns.Config{Project: project})
	if err != nil {
		b.Fatal(err)
	}
	conformance.BenchmarkAdjust(b, p)
}
