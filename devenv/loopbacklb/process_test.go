package loopbacklb

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

func TestServeFromEnvSaysWhatItWasGiven(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     *string // nil: unset
		served  bool
		wantErr string
	}{
		{name: "unset: the binary goes on to its tests", served: false},
		{name: "not JSON", env: ptr("cluster-1=x"), served: true, wantErr: EnvServe},
		{name: "no member", env: ptr("[]"), served: true, wantErr: "names no load balancer"},
		{name: "no kubeconfig", env: ptr(strings.TrimPrefix(ServeEnv([]Member{{
			Cluster: "cluster-1", Kubeconfig: "/nonexistent/kubeconfig", Block: netip.MustParsePrefix("127.40.0.0/16"),
		}}), EnvServe+"=")), served: true, wantErr: "load balancer of cluster-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != nil {
				t.Setenv(EnvServe, *tc.env)
			}
			served, err := ServeFromEnv(context.Background())
			if served != tc.served {
				t.Errorf("served = %v, want %v", served, tc.served)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestServeEnvRoundTrips(t *testing.T) {
	want := []Member{
		{Cluster: "cluster-1", Kubeconfig: "/tmp/a=b;c/kubeconfig", Context: "cluster-1", Block: netip.MustParsePrefix("127.40.0.0/16")},
		{Cluster: "cluster-2", Kubeconfig: "/tmp/kubeconfig", Block: netip.MustParsePrefix("127.41.0.0/16")},
	}
	name, value, _ := strings.Cut(ServeEnv(want), "=")
	if name != EnvServe {
		t.Fatalf("entry named %q, want %q", name, EnvServe)
	}
	got, err := parseMembers(value)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d members, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
