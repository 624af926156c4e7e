package clusterset

import (
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Collectors are package variables registered with the default registry,
// which is the one CoreDNS's prometheus plugin serves, as every CoreDNS
// plugin does.
var (
	requestCount = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "requests_total",
		Help:      "Queries clusterset answered, by response code.",
	}, []string{"rcode"})

	zoneNames = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "names",
		Help:      "Names with records in the clusterset zone.",
	})
)

// countedRcodes are the response codes the plugin gives.
var countedRcodes = [...]int{dns.RcodeSuccess, dns.RcodeNameError, dns.RcodeServerFailure, dns.RcodeRefused, dns.RcodeNotImplemented}

// requestCounters holds requests_total's counters resolved once, so that
// counting a query is an atomic add rather than a label lookup.
type requestCounters [len(countedRcodes)]prometheus.Counter

func newRequestCounters() *requestCounters {
	var c requestCounters
	for i, rcode := range countedRcodes {
		c[i] = requestCount.WithLabelValues(dns.RcodeToString[rcode])
	}
	return &c
}

func (c *requestCounters) count(rcode int) {
	for i, r := range countedRcodes {
		if r == rcode {
			c[i].Inc()
			return
		}
	}
}
