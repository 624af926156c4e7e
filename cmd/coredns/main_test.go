package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kfed-io/kfed/internal/buildinfo"
)

// CoreDNS's prometheus plugin serves the default registry, where the kfed
// plugin registers its collectors.
func TestCoreDNSMetricsCarryKfedBuildInfo(t *testing.T) {
	labels, err := buildinfo.Gathered(prometheus.DefaultGatherer, "coredns_kfed_build_info")
	if err != nil {
		t.Fatal(err)
	}
	if want := buildinfo.Get(); labels["version"] != want.Version || labels["revision"] != want.Revision || labels["goversion"] != want.GoVersion {
		t.Errorf("coredns_kfed_build_info labels %v, want %+v", labels, want)
	}
}
