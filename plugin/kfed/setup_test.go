package kfed

import (
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/fall"
)

func TestParseReadsTheCorefileBlock(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    config
		wantErr string
	}{
		{
			name: "every property",
			input: `kfed example.com other.org {
				federation myfed
				cluster cluster-1
				kubeconfig /etc/kfed/control-plane.kubeconfig federation
				ttl 60
				fallthrough other.org
			}`,
			want: config{
				zones: []string{"example.com.", "other.org."}, federation: "myfed", cluster: "cluster-1",
				kubeconfig: "/etc/kfed/control-plane.kubeconfig", context: "federation", ttl: 60,
				fall: fall.F{Zones: []string{"other.org."}},
			},
		},
		{
			name:  "zones default to the server block's and ttl to 30",
			input: "kfed {\n federation myfed\n}",
			want:  config{zones: []string{"kfed.test."}, federation: "myfed", ttl: 30},
		},
		{
			name:  "kubeconfig without context uses its current one",
			input: "kfed {\n federation myfed\n kubeconfig /k\n fallthrough\n}",
			want:  config{zones: []string{"kfed.test."}, federation: "myfed", kubeconfig: "/k", ttl: 30, fall: fall.F{Zones: []string{"."}}},
		},
		{name: "federation is required", input: "kfed {\n cluster c\n}", wantErr: "federation NAME is required"},
		{name: "federation needs a name", input: "kfed {\n federation\n}", wantErr: "Wrong argument count"},
		{name: "federation takes one name", input: "kfed {\n federation a b\n}", wantErr: "Wrong argument count"},
		{name: "kubeconfig takes a path and a context at most", input: "kfed {\n federation f\n kubeconfig a b c\n}", wantErr: "Wrong argument count"},
		{name: "ttl is a number of seconds", input: "kfed {\n federation f\n ttl 30s\n}", wantErr: "ttl must be"},
		{name: "ttl is at least a second", input: "kfed {\n federation f\n ttl 0\n}", wantErr: "ttl must be"},
		{name: "unknown property is refused", input: "kfed {\n federation f\n weight 3\n}", wantErr: `unknown property "weight"`},
		{name: "one kfed per server block", input: "kfed {\n federation f\n}\nkfed {\n federation g\n}", wantErr: "this plugin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tt.input)
			c.ServerBlockKeys = []string{"kfed.test"}
			got, err := parse(c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.zones, tt.want.zones) || got.federation != tt.want.federation ||
				got.cluster != tt.want.cluster || got.kubeconfig != tt.want.kubeconfig ||
				got.context != tt.want.context || got.ttl != tt.want.ttl || !got.fall.Equal(tt.want.fall) {
				t.Errorf("parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSetupFailsOnAnUnreadableKubeconfig(t *testing.T) {
	c := caddy.NewTestController("dns", "kfed kfed.test {\n federation f\n kubeconfig /nonexistent/kubeconfig\n}")
	err := setup(c)
	if err == nil || !strings.Contains(err.Error(), "plugin/kfed") || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Errorf("setup error %v, want a plugin/kfed error naming the kubeconfig", err)
	}
}
