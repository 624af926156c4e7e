package kfed

import (
	"cmp"
	"net/netip"
	"reflect"
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
		// rtt is the namespace HealthReports are read from: the cluster's
		// member namespace when empty, none when "off".
		rtt string
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
		{
			name: "name servers with and without addresses, and SOA timers",
			input: `kfed example.com {
				federation myfed
				ns ns1.example.com 192.0.2.1 2001:db8::1
				ns NS2.Example.COM.
				ns ns.provider.net
				soa 1h 10m 336h
			}`,
			want: config{
				zones: []string{"example.com."}, federation: "myfed", ttl: 30,
				servers: []nameServer{
					{name: "ns1.example.com.", addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}},
					{name: "ns2.example.com."},
					{name: "ns.provider.net."},
				},
				timers: soaTimers{refresh: 3600, retry: 600, expire: 2 * 7 * 24 * 3600},
			},
		},
		{
			name:  "SOA timers in seconds",
			input: "kfed {\n federation f\n soa 900 300 604800\n}",
			want:  config{zones: []string{"kfed.test."}, federation: "f", ttl: 30, timers: soaTimers{refresh: 900, retry: 300, expire: 604800}},
		},
		{name: "ns needs a name", input: "kfed {\n federation f\n ns\n}", wantErr: "wants NAME"},
		{name: "ns addresses are addresses", input: "kfed {\n federation f\n ns ns1.kfed.test 192.0.2.300\n}", wantErr: "not an IPv4 or IPv6 address"},
		{name: "ns addresses only for a name in the zones", input: "kfed {\n federation f\n ns ns.other.net 192.0.2.1\n}", wantErr: "only for a name in the plugin's zones"},
		{name: "soa takes three timers", input: "kfed {\n federation f\n soa 1h 10m\n}", wantErr: "wants REFRESH RETRY EXPIRE"},
		{name: "soa timers are durations", input: "kfed {\n federation f\n soa 1h ten 2w\n}", wantErr: `"ten" is not a duration`},
		{name: "soa expire outlasts refresh and retry", input: "kfed {\n federation f\n soa 1h 10m 30m\n}", wantErr: "below refresh plus retry"},
		{
			name:  "trusted namespaces replace kfed's own",
			input: "kfed {\n federation f\n trusted_namespaces dns-admins kfed-system\n}",
			want:  config{zones: []string{"kfed.test."}, federation: "f", ttl: 30, trusted: []string{"dns-admins", "kfed-system"}},
		},
		{name: "trusted namespaces need a name", input: "kfed {\n federation f\n trusted_namespaces\n}", wantErr: "Wrong argument count"},
		{name: "trusted namespaces are namespace names", input: "kfed {\n federation f\n trusted_namespaces Kfed_System\n}", wantErr: "is not a namespace name"},
		{name: "rtt off reads no HealthReports", input: "kfed {\n federation f\n rtt off\n}",
			want: config{zones: []string{"kfed.test."}, federation: "f", ttl: 30}, rtt: "off"},
		{name: "rtt names the checkers' namespace", input: "kfed {\n federation f\n rtt kfed-checkers\n}",
			want: config{zones: []string{"kfed.test."}, federation: "f", ttl: 30}, rtt: "kfed-checkers"},
		{name: "rtt takes a namespace name", input: "kfed {\n federation f\n rtt Kfed_System\n}", wantErr: "neither a namespace nor off"},
		{name: "rtt takes one argument", input: "kfed {\n federation f\n rtt\n}", wantErr: "Wrong argument count"},
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
				got.context != tt.want.context || got.ttl != tt.want.ttl || !got.fall.Equal(tt.want.fall) ||
				!reflect.DeepEqual(got.servers, tt.want.servers) || got.timers != cmp.Or(tt.want.timers, defaultTimers) ||
				!slices.Equal(got.trusted, orDefault(tt.want.trusted)) || got.rttNamespace != rttNamespace(tt.rtt) || got.rttOff != (tt.rtt == "off") {
				t.Errorf("parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// rttNamespace is the namespace a test's rtt names: "" for the cluster's
// member namespace, and with off.
func rttNamespace(rtt string) string {
	if rtt == "off" {
		return ""
	}
	return rtt
}

// orDefault is the trusted namespaces a block that names none has.
func orDefault(trusted []string) []string {
	if trusted == nil {
		return []string{"kfed-system"}
	}
	return trusted
}

func TestSetupFailsOnAnUnreadableKubeconfig(t *testing.T) {
	c := caddy.NewTestController("dns", "kfed kfed.test {\n federation f\n kubeconfig /nonexistent/kubeconfig\n}")
	err := setup(c)
	if err == nil || !strings.Contains(err.Error(), "plugin/kfed") || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Errorf("setup error %v, want a plugin/kfed error naming the kubeconfig", err)
	}
}
