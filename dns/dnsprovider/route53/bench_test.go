package route53_test

import (
	"context"
	"testing"

	"github.com/kfed-io/kfed/dns/dnsprovider/conformance"
	"github.com/kfed-io/kfed/dns/dnsprovider/route53"
	"github.com/kfed-io/kfed/test/route53fake"
)

// BenchmarkPublish1000Services runs conformance.BenchmarkPublish against
// the Route53 endpoint, paced at Route53's 5 requests per second.
func BenchmarkPublish1000Services(b *testing.B) {
	conformance.BenchmarkPublish(b, func(b *testing.B) conformance.Target {
		fake := route53fake.New()
		b.Cleanup(fake.Close)
		id := fake.AddZone("kfed.test", false)
		p := route53.New(client(fake), route53.Config{ZoneIDs: []string{id}})
		zones, err := p.Zones(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return conformance.Target{Provider: p, Zone: zones[0], Weighted: true}
	})
}

// BenchmarkAdjust1000Services is conformance.BenchmarkAdjust for Route53.
func BenchmarkAdjust1000Services(b *testing.B) {
	conformance.BenchmarkAdjust(b, route53.New(nil, route53.Config{}))
}
