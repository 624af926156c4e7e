package listening_test

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/whoami"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/listening"
)

const probe = "listeningprobe"

// probes are the flags of the probe plugin's instances, in the order their
// setups ran, with what each read in its OnStartup.
type probes struct {
	mu        sync.Mutex
	flags     []*atomic.Bool
	atStartup []bool
}

func (p *probes) last() (*atomic.Bool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flags[len(p.flags)-1], p.atStartup[len(p.atStartup)-1]
}

var seen = &probes{}

func TestMain(m *testing.M) {
	// A plugin as kfed's are: it tracks its flag and reads it in its own
	// OnStartup, which CoreDNS runs before it binds the ports.
	dnsserver.Directives = append(dnsserver.Directives, probe)
	plugin.Register(probe, func(c *caddy.Controller) error {
		c.Next()
		flag := &atomic.Bool{}
		listening.Track(c, probe, flag)
		seen.mu.Lock()
		seen.flags = append(seen.flags, flag)
		seen.mu.Unlock()
		c.OnStartup(func() error {
			seen.mu.Lock()
			seen.atStartup = append(seen.atStartup, flag.Load())
			seen.mu.Unlock()
			return nil
		})
		return nil
	})
	caddy.RegisterEventHook(probe, listening.Hook(probe))
	dnsserver.Quiet = true
	caddy.Quiet = true
	m.Run()
}

func TestTheFlagIsSetOnceTheServersAnswer(t *testing.T) {
	port := freePort(t)
	corefile := func(zone string) caddy.Input {
		return caddy.CaddyfileInput{ServerTypeName: "dns",
			Contents: []byte(fmt.Sprintf("%s:%d {\n bind 127.0.0.1\n whoami\n %s\n}\n", zone, port, probe))}
	}
	inst, err := caddy.Start(corefile("a.test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	for _, tt := range []struct {
		name   string
		zone   string
		reload bool
	}{
		{name: "first start", zone: "a.test."},
		{name: "after a reload", zone: "b.test.", reload: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reload {
				if inst, err = inst.Restart(corefile("b.test")); err != nil {
					t.Fatal(err)
				}
			}
			flag, atStartup := seen.last()
			if atStartup {
				t.Error("the flag was set in OnStartup, before the servers bound their ports")
			}
			if !flag.Load() {
				t.Error("the flag is not set once the instance started")
			}
			// What the flag promises: queries over UDP and TCP are answered.
			for _, proto := range []string{"udp", "tcp"} {
				c := &dns.Client{Net: proto, Timeout: 2 * time.Second}
				m := new(dns.Msg).SetQuestion(tt.zone, dns.TypeA)
				if _, _, err := c.Exchange(m, fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
					t.Errorf("over %s once the flag is set: %v", proto, err)
				}
			}
		})
	}
}

// freePort is a port free for both UDP and TCP on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	t.Fatal("no port free for both UDP and TCP")
	return 0
}
