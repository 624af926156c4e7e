package main

import (
	"testing"

	"github.com/kfed-io/kfed/buildinfo"
)

func TestAgentMetricsCarryBuildInfo(t *testing.T) {
	labels, err := buildinfo.Gathered(newRegistry(), "kfed_build_info")
	if err != nil {
		t.Fatal(err)
	}
	if want := buildinfo.Get(); labels["version"] != want.Version || labels["revision"] != want.Revision || labels["goversion"] != want.GoVersion {
		t.Errorf("kfed_build_info labels %v, want %+v", labels, want)
	}
}
