// Command coredns is kfed's CoreDNS: CoreDNS with kfed, which answers a
// federation's Service names from its control plane's DNSEndpoints, with
// clusterset, which answers a member's Multi-Cluster Services names
// (clusterset.local) from its ServiceImports and EndpointSlices, and the
// in-tree plugins a DNS server beside the cluster's own needs (plugins.go).
// Flags and Corefile are CoreDNS's own (coredns -help); -version (or
// --version) prints CoreDNS's version and, where CoreDNS prints its git commit,
// kfed's version:
//
//	CoreDNS-1.15.0
//	linux/amd64, go1.26.8, kfed v0.3.0 (revision 1a2b3c, go1.26.8)
package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	// Trusted roots for plugins that verify servers (forward over TLS,
	// grpc) in an image with no CA bundle; a bundle on the machine takes
	// precedence. docs/images.md.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/kfed-io/kfed/internal/buildinfo"
	"github.com/kfed-io/kfed/internal/memlimit"
	_ "github.com/kfed-io/kfed/plugin/clusterset"
	_ "github.com/kfed-io/kfed/plugin/kfed"
)

func main() {
	// A plugin runs in the order of this list, not the Corefile's. kfed goes
	// just before hosts: after the plugins that shape every query (log,
	// cache, rewrite, ...) and before the ones that serve data, so that
	// cache keeps its answers and fallthrough reaches hosts, file,
	// kubernetes and forward.
	i := slices.Index(dnsserver.Directives, "hosts")
	if i < 0 {
		i = len(dnsserver.Directives)
	}
	// clusterset, which answers the Multi-Cluster Services zone
	// (clusterset.local) from the cluster's ServiceImports, goes beside it.
	dnsserver.Directives = slices.Insert(dnsserver.Directives, i, "kfed", "clusterset")
	// CoreDNS is built from a module version here, not from its own git
	// tree, so its commit slot carries kfed's build instead; CoreDNS prints
	// it for -version and in its start-up log line.
	coremain.GitCommit = "kfed " + buildinfo.Get().String()
	if _, err := memlimit.Set(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "coredns:", err)
		os.Exit(1)
	}
	coremain.Run()
}
