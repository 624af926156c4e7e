package main

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kfed-io/kfed/internal/buildinfo"
)

func TestControllerMetricsCarryBuildInfo(t *testing.T) {
	if err := registerBuildInfo(ctrlmetrics.Registry); err != nil {
		t.Fatal(err)
	}
	labels, err := buildinfo.Gathered(ctrlmetrics.Registry, "kfed_build_info")
	if err != nil {
		t.Fatal(err)
	}
	if want := buildinfo.Get(); labels["version"] != want.Version || labels["revision"] != want.Revision || labels["goversion"] != want.GoVersion {
		t.Errorf("kfed_build_info labels %v, want %+v", labels, want)
	}
}
