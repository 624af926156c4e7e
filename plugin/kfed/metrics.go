package kfed

import (
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/kfed-io/kfed/internal/buildinfo"
)

// Collectors are package variables registered with the default registry,
// which is the one CoreDNS's prometheus plugin serves; every CoreDNS plugin
// does the same.
var (
	requestCount = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "kfed",
		Name:      "requests_total",
		Help:      "Queries kfed answered, by query type and response code.",
	}, []string{"type", "rcode"})

	indexNames = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "kfed",
		Name:      "index_names",
		Help:      "Names with records in kfed's index, by federation.",
	}, []string{"federation"})

	refusedEndpoints = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "kfed",
		Name:      "refused_endpoints",
		Help:      "Endpoints of DNSEndpoints not served because their namespace may not publish their names (tenancy), by federation.",
	}, []string{"federation"})

	syncAge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "kfed",
		Name:      "sync_age_seconds",
		Help:      "Seconds since kfed last heard from the federation control plane (list, event or watch bookmark).",
	}, []string{"federation"})

	// buildInfo is coredns_kfed_build_info{version,revision,goversion} 1:
	// the kfed build this CoreDNS carries.
	buildInfo = promauto.NewGaugeFunc(buildinfo.Get().GaugeOpts(plugin.Namespace, "kfed"), func() float64 { return 1 })
)

// countedTypes are the query types requests_total names; others count as
// "other", so that arbitrary query types cannot grow the series without
// bound.
var countedTypes = [...]uint16{
	dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSRV, dns.TypeTXT,
	dns.TypeSOA, dns.TypeNS, dns.TypeANY,
}

// countedRcodes are the response codes the plugin gives.
var countedRcodes = [...]int{dns.RcodeSuccess, dns.RcodeNameError, dns.RcodeServerFailure}

// requestCounters holds the requests_total counters resolved once, so that
// counting a query is an atomic add rather than a label lookup.
type requestCounters [len(countedTypes) + 1][len(countedRcodes)]prometheus.Counter

func newRequestCounters() requestCounters {
	var c requestCounters
	for i := range c {
		typ := "other"
		if i < len(countedTypes) {
			typ = dns.TypeToString[countedTypes[i]]
		}
		for j, rcode := range countedRcodes {
			c[i][j] = requestCount.WithLabelValues(typ, dns.RcodeToString[rcode])
		}
	}
	return c
}

func (c *requestCounters) count(qtype uint16, rcode int) {
	i := len(countedTypes)
	for t, ct := range countedTypes {
		if ct == qtype {
			i = t
			break
		}
	}
	for j, cr := range countedRcodes {
		if cr == rcode {
			if c[i][j] != nil {
				c[i][j].Inc()
			}
			return
		}
	}
}
