// Package listening tells a CoreDNS plugin when the servers of its instance
// have bound their sockets.
//
// CoreDNS runs every plugin's OnStartup before it binds any server's ports,
// and the ready plugin answers /ready from its own OnStartup on. A plugin
// that reports ready as soon as its OnStartup has what it waits for lets
// /ready say 200 while port 53 still refuses queries: a kubelet then marks
// the pod Ready and kube-proxy sends it queries it refuses (seen in a chart
// upgrade under load). Caddy emits InstanceStartupEvent once an instance's
// servers listen, on a first start and after a reload alike.
package listening

import (
	"sync/atomic"

	"github.com/coredns/caddy"
)

// key is where Track keeps a plugin's flags in its caddy instance's storage.
type key struct{ plugin string }

// Track has flag set once the servers of c's instance listen. plugin is the
// name its Hook was made with.
func Track(c *caddy.Controller, plugin string, flag *atomic.Bool) {
	k := key{plugin}
	flags, _ := c.Get(k).([]*atomic.Bool)
	c.Set(k, append(flags, flag))
}

// Hook is the caddy event hook that sets the flags Track recorded for
// plugin in the instance that started. The plugin registers it, beside
// itself, with caddy.RegisterEventHook.
func Hook(plugin string) caddy.EventHook {
	return func(event caddy.EventName, info any) error {
		inst, ok := info.(*caddy.Instance)
		if event != caddy.InstanceStartupEvent || !ok {
			return nil
		}
		inst.StorageMu.RLock()
		flags, _ := inst.Storage[key{plugin}].([]*atomic.Bool)
		inst.StorageMu.RUnlock()
		for _, f := range flags {
			f.Store(true)
		}
		return nil
	}
}
