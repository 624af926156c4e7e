package clusterset

import (
	"reflect"
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
			name:  "no block: clusterset.local, in-cluster config, TTL 5",
			input: "clusterset",
			want:  config{zone: "clusterset.local.", ttl: 5},
		},
		{
			name: "every property",
			input: `clusterset Example.Org {
				kubeconfig /etc/member.kubeconfig cluster-1
				ttl 30
				fallthrough
			}`,
			want: config{zone: "example.org.", kubeconfig: "/etc/member.kubeconfig", context: "cluster-1", ttl: 30,
				fall: fall.F{Zones: []string{"."}}},
		},
		{name: "kubeconfig without context", input: "clusterset {\n kubeconfig /k\n}", want: config{zone: "clusterset.local.", kubeconfig: "/k", ttl: 5}},
		{name: "a clusterset has one zone", input: "clusterset a.local b.local", wantErr: "one zone at most"},
		{name: "the root is no zone", input: "clusterset .", wantErr: "is not a zone"},
		{name: "ttl is a number of seconds", input: "clusterset {\n ttl 5s\n}", wantErr: "ttl must be"},
		{name: "kubeconfig takes a path and a context at most", input: "clusterset {\n kubeconfig a b c\n}", wantErr: "Wrong argument count"},
		{name: "unknown property is refused", input: "clusterset {\n federation f\n}", wantErr: `unknown property "federation"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(caddy.NewTestController("dns", tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
