package rfc2136_test

import (
	"testing"

	"github.com/kfed-io/kfed/dns/dnsprovider/conformance"
	"github.com/kfed-io/kfed/test/bindtest"
)

// BenchmarkPublish1000Services runs conformance.BenchmarkPublish against a
// real BIND with the default message size; RFC 2136 has no weights, so the
// clusters' addresses merge into one record set per name.
func BenchmarkPublish1000Services(b *testing.B) {
	conformance.BenchmarkPublish(b, func(b *testing.B) conformance.Target {
		srv := bindtest.Start(b, zone)
		p, z := newProvider(b, srv, 0)
		return conformance.Target{Provider: p, Zone: z}
	})
}
