package clusterset

import (
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/clusterset/zone"
	"github.com/kfed-io/kfed/plugin/kubeclient"
	"github.com/kfed-io/kfed/plugin/listening"
)

func init() {
	plugin.Register(pluginName, setup)
	caddy.RegisterEventHook(pluginName+"-listening", listening.Hook(pluginName))
}

// defaultZone is the zone the MCS API fixes: the specification calls it
// <clusterset-zone> because it may become configurable, and it is here.
const defaultZone = "clusterset.local."

// defaultTTL is CoreDNS's kubernetes plugin's: the cluster-local names'
// TTL, which a headless Service's endpoints change as often as.
const defaultTTL = 5

// startupWait is how long CoreDNS's start waits for the first full list of
// ServiceImports and EndpointSlices.
const startupWait = 5 * time.Second

// config is the plugin's block of the Corefile.
type config struct {
	zone       string
	kubeconfig string
	context    string
	ttl        uint32
	fall       fall.F
}

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	rc, err := kubeclient.Config(cfg.kubeconfig, cfg.context)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	cs := newClusterset(cfg)
	w, err := newWatcher(rc, cs)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	listening.Track(c, pluginName, &cs.listening)
	c.OnStartup(func() error {
		if err := w.start(); err != nil {
			return plugin.Error(pluginName, err)
		}
		select {
		case <-w.synced:
		case <-time.After(startupWait):
			log.Warningf("no full list of ServiceImports and EndpointSlices from %s after %v; answering SERVFAIL until there is", rc.Host, startupWait)
		}
		return nil
	})
	c.OnShutdown(func() error {
		w.stop()
		return nil
	})
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		cs.Next = next
		return cs
	})
	return nil
}

// parse reads
//
//	clusterset [ZONE] {
//	    kubeconfig PATH [CONTEXT]
//	    ttl SECONDS
//	    fallthrough [ZONES...]
//	}
func parse(c *caddy.Controller) (config, error) {
	cfg := config{zone: defaultZone, ttl: defaultTTL}
	blocks := 0
	for c.Next() {
		if blocks++; blocks > 1 {
			return cfg, plugin.ErrOnce
		}
		switch args := c.RemainingArgs(); len(args) {
		case 0:
		case 1:
			z := strings.ToLower(dns.Fqdn(args[0]))
			if _, ok := dns.IsDomainName(z); !ok || z == "." || strings.ContainsRune(z, '\\') {
				return cfg, c.Errf("%q is not a zone", args[0])
			}
			cfg.zone = z
		default:
			return cfg, c.Errf("one zone at most: a clusterset has one")
		}
		for c.NextBlock() {
			switch c.Val() {
			case "kubeconfig":
				args := c.RemainingArgs()
				if len(args) < 1 || len(args) > 2 {
					return cfg, c.ArgErr()
				}
				cfg.kubeconfig = args[0]
				if len(args) == 2 {
					cfg.context = args[1]
				}
			case "ttl":
				args := c.RemainingArgs()
				if len(args) != 1 {
					return cfg, c.ArgErr()
				}
				ttl, err := strconv.ParseUint(args[0], 10, 32)
				if err != nil || ttl > 3600 {
					return cfg, c.Errf("ttl must be a number of seconds from 0 to 3600: %q", args[0])
				}
				cfg.ttl = uint32(ttl)
			case "fallthrough":
				cfg.fall.SetZonesFromArgs(c.RemainingArgs())
			default:
				return cfg, c.Errf("unknown property %q", c.Val())
			}
		}
	}
	return cfg, nil
}

// newClusterset returns the plugin for cfg, with an empty zone.
func newClusterset(cfg config) *Clusterset {
	z := zone.New(cfg.zone, cfg.ttl)
	return &Clusterset{zone: z, suffix: "." + z.Origin(), server: "ns.dns." + z.Origin(), ttl: cfg.ttl, fall: cfg.fall,
		requests: newRequestCounters()}
}
