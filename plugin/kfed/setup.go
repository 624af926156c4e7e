package kfed

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/validation"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/plugin/kubeclient"
	"github.com/kfed-io/kfed/plugin/listening"
	"github.com/kfed-io/kfed/policy/tenancy"
)

func init() {
	plugin.Register("kfed", setup)
	caddy.RegisterEventHook("kfed-listening", listening.Hook("kfed"))
}

// defaultTTL is the TTL of synthesized records, the negative TTL, and that of
// endpoints without a recordTTL: kfed's default Service TTL, so that a failed
// over name is not cached long.
const defaultTTL = 30

// startupWait is how long CoreDNS's start waits for the first full list of
// DNSEndpoints, so that a fresh server answers at once when the control plane
// is reachable and starts all the same (answering SERVFAIL) when it is not.
const startupWait = 5 * time.Second

// config is the plugin's block of the Corefile.
type config struct {
	zones      []string
	federation string
	cluster    string
	kubeconfig string
	context    string
	ttl        uint32
	fall       fall.F
	// trusted are the namespaces whose DNSEndpoints may publish names that
	// are no namespace's federated names.
	trusted []string
	servers []nameServer
	timers  soaTimers
	// rttNamespace holds the checkers' HealthReports, whose round-trip
	// times order clusters within a tier: the cluster's member namespace
	// when "" (ADR 0013). rttOff reads none.
	rttNamespace string
	rttOff       bool
}

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error("kfed", err)
	}
	rc, err := kubeclient.Config(cfg.kubeconfig, cfg.context)
	if err != nil {
		return plugin.Error("kfed", err)
	}
	k := newKfed(cfg)
	// notify is set at startup, before the watch starts, when the server
	// block has a transfer block to send NOTIFY to.
	var notify *notifier
	w, err := newWatcher(rc, cfg.federation, tenancy.NewEndpoints(cfg.federation, cfg.trusted), k.index, &k.serial,
		func() {
			if notify != nil && k.synced.Load() {
				notify.signal()
			}
		},
		func() {
			k.synced.Store(true)
			if notify != nil {
				notify.signal()
			}
		})
	if err != nil {
		return plugin.Error("kfed", err)
	}
	var rtts *rttWatcher
	if cfg.cluster != "" && !cfg.rttOff {
		ns := cmp.Or(cfg.rttNamespace, kfedv1alpha1.MemberNamespace(cfg.cluster))
		if rtts, err = newRTTWatcher(rc, cfg.federation, cfg.cluster, ns, k.index); err != nil {
			return plugin.Error("kfed", err)
		}
	}
	listening.Track(c, "kfed", &k.listening)
	c.OnStartup(func() error {
		if t, ok := dnsserver.GetConfig(c).Handler("transfer").(*transfer.Transfer); ok {
			notify = newNotifier(t, k.zones, k.serial.soa)
			notify.start()
		}
		if err := w.start(); err != nil {
			return plugin.Error("kfed", err)
		}
		if rtts != nil {
			// Not waited for: round-trip times refine the order, and the
			// plugin is ready without them.
			if err := rtts.start(); err != nil {
				return plugin.Error("kfed", err)
			}
		}
		select {
		case <-w.synced:
		case <-time.After(startupWait):
			log.Warningf("no full list of DNSEndpoints from %s after %v; answering SERVFAIL until there is", rc.Host, startupWait)
		}
		return nil
	})
	c.OnShutdown(func() error {
		w.stop()
		if rtts != nil {
			rtts.stop()
		}
		if notify != nil {
			notify.stop()
		}
		return nil
	})
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		k.Next = next
		return k
	})
	return nil
}

func newKfed(cfg config) *Kfed {
	k := &Kfed{
		zones:    cfg.zones,
		cluster:  cfg.cluster,
		fall:     cfg.fall,
		ttl:      cfg.ttl,
		index:    index.New(cfg.cluster, cfg.ttl),
		timers:   cfg.timers,
		requests: newRequestCounters(),
	}
	if k.timers == (soaTimers{}) {
		k.timers = defaultTimers
	}
	for _, z := range cfg.zones {
		k.apexes = append(k.apexes, newApex(z, cfg.servers, cfg.ttl))
	}
	return k
}

// parse reads
//
//	kfed [ZONES...] {
//	    federation NAME
//	    cluster NAME
//	    kubeconfig PATH [CONTEXT]
//	    ttl SECONDS
//	    trusted_namespaces NAMESPACE...
//	    rtt NAMESPACE|off
//	    ns NAME [ADDRESS...]
//	    soa REFRESH RETRY EXPIRE
//	    fallthrough [ZONES...]
//	}
//
// It is longer than kfed's other functions on purpose: one case per
// property, as CoreDNS's plugins parse, so that the block's syntax reads in
// one place.
func parse(c *caddy.Controller) (config, error) {
	cfg := config{ttl: defaultTTL, timers: defaultTimers, trusted: []string{kfedv1alpha1.DefaultNamespace}}
	blocks := 0
	for c.Next() {
		if blocks++; blocks > 1 {
			return cfg, plugin.ErrOnce
		}
		cfg.zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
		for c.NextBlock() {
			switch c.Val() {
			case "federation":
				if !c.NextArg() {
					return cfg, c.ArgErr()
				}
				cfg.federation = c.Val()
			case "cluster":
				if !c.NextArg() {
					return cfg, c.ArgErr()
				}
				cfg.cluster = c.Val()
			case "kubeconfig":
				args := c.RemainingArgs()
				if len(args) < 1 || len(args) > 2 {
					return cfg, c.ArgErr()
				}
				cfg.kubeconfig = args[0]
				if len(args) == 2 {
					cfg.context = args[1]
				}
				continue
			case "ttl":
				if !c.NextArg() {
					return cfg, c.ArgErr()
				}
				ttl, err := strconv.ParseUint(c.Val(), 10, 32)
				if err != nil || ttl == 0 || ttl > 3600 {
					return cfg, c.Errf("ttl must be a number of seconds from 1 to 3600: %q", c.Val())
				}
				cfg.ttl = uint32(ttl)
			case "trusted_namespaces":
				args := c.RemainingArgs()
				if len(args) == 0 {
					return cfg, c.ArgErr()
				}
				trusted, err := tenancy.ParseNamespaces(strings.Join(args, ","))
				if err != nil {
					return cfg, c.Errf("trusted_namespaces: %v", err)
				}
				cfg.trusted = trusted
				continue
			case "rtt":
				if !c.NextArg() {
					return cfg, c.ArgErr()
				}
				switch ns := c.Val(); {
				case ns == "off":
					cfg.rttNamespace, cfg.rttOff = "", true
				case len(validation.IsDNS1123Label(ns)) > 0:
					return cfg, c.Errf("rtt: %q is neither a namespace nor off", ns)
				default:
					cfg.rttNamespace, cfg.rttOff = ns, false
				}
			case "ns":
				ns, err := parseNameServer(c.RemainingArgs())
				if err != nil {
					return cfg, c.Errf("ns: %v", err)
				}
				cfg.servers = append(cfg.servers, ns)
				continue
			case "soa":
				t, err := parseTimers(c.RemainingArgs())
				if err != nil {
					return cfg, c.Errf("soa: %v", err)
				}
				cfg.timers = t
				continue
			case "fallthrough":
				cfg.fall.SetZonesFromArgs(c.RemainingArgs())
				continue
			default:
				return cfg, c.Errf("unknown property %q", c.Val())
			}
			if c.NextArg() {
				return cfg, c.ArgErr()
			}
		}
	}
	if cfg.federation == "" {
		return cfg, errors.New("federation NAME is required: it selects the DNSEndpoints labelled kfed.io/federation=NAME")
	}
	for _, ns := range cfg.servers {
		if len(ns.addrs) > 0 && plugin.Zones(cfg.zones).Matches(ns.name) == "" {
			return cfg, fmt.Errorf("ns %s: addresses are served only for a name in the plugin's zones %v", ns.name, cfg.zones)
		}
	}
	return cfg, nil
}

// parseNameServer reads "NAME [ADDRESS...]".
func parseNameServer(args []string) (nameServer, error) {
	if len(args) == 0 {
		return nameServer{}, errors.New("wants NAME [ADDRESS...]")
	}
	name := dns.Fqdn(strings.ToLower(args[0]))
	if _, ok := dns.IsDomainName(name); !ok || name == "." || strings.ContainsRune(name, '\\') {
		return nameServer{}, fmt.Errorf("%q is not a host name", args[0])
	}
	ns := nameServer{name: name}
	for _, a := range args[1:] {
		addr, err := netip.ParseAddr(a)
		if err != nil || addr.Zone() != "" || addr.Is4In6() {
			return nameServer{}, fmt.Errorf("%q is not an IPv4 or IPv6 address", a)
		}
		ns.addrs = append(ns.addrs, addr)
	}
	return ns, nil
}

// parseTimers reads "REFRESH RETRY EXPIRE", each a Go duration ("5m") or a
// number of seconds.
func parseTimers(args []string) (soaTimers, error) {
	if len(args) != 3 {
		return soaTimers{}, errors.New("wants REFRESH RETRY EXPIRE")
	}
	var v [3]uint32
	for i, a := range args {
		secs, err := strconv.ParseUint(a, 10, 32)
		if err != nil {
			d, derr := time.ParseDuration(a)
			if derr != nil || d < time.Second || d.Seconds() > math.MaxInt32 {
				return soaTimers{}, fmt.Errorf("%q is not a duration of 1s to 68 years", a)
			}
			secs = uint64(d / time.Second)
		}
		if secs == 0 || secs > math.MaxInt32 {
			return soaTimers{}, fmt.Errorf("%q is not a duration of 1s to 68 years", a)
		}
		v[i] = uint32(secs)
	}
	t := soaTimers{refresh: v[0], retry: v[1], expire: v[2]}
	if t.expire < t.refresh+t.retry {
		// RFC 1912: a secondary would expire the zone before retrying.
		return soaTimers{}, fmt.Errorf("expire %ds is below refresh plus retry", t.expire)
	}
	return t, nil
}
