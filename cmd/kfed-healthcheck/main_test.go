package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/internal/buildinfo"
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

func TestFlagsReadAsKubectlsAndAsBefore(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*agentFlags) bool
		wantErr string
	}{
		{"double-dash flags", []string{"--cluster=c1", "--federation", "f", "--interval=2s"},
			func(f *agentFlags) bool {
				return f.o.Cluster == "c1" && f.o.Federation == "f" && f.o.Defaults.Interval == 2*time.Second
			}, ""},
		{"a single dash still reads a long flag", []string{"-cluster=c1", "-interval", "3s", "-timeout=1s"},
			func(f *agentFlags) bool {
				return f.o.Cluster == "c1" && f.o.Defaults.Interval == 3*time.Second && f.o.Defaults.Timeout == time.Second
			}, ""},
		{"-v is the log verbosity, not the version", []string{"-v=4", "--cluster=c1"},
			func(f *agentFlags) bool { return !f.version && f.o.Cluster == "c1" }, ""},
		{"--version has no shorthand", []string{"--version"}, func(f *agentFlags) bool { return f.version }, ""},
		{"an unknown flag is named, with where to read", []string{"--intervall=2s"}, nil, "unknown flag: --intervall (see kfed-healthcheck --help)"},
		{"a stray argument is refused", []string{"--cluster=c1", "c2"}, nil, `takes flags only, not ["c2"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(f) {
				t.Errorf("parsed %+v", f)
			}
		})
	}
}
