package publish

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Resolver looks up the addresses of a load balancer's hostname.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ResolveHostname looks up a load balancer's hostname (an AWS ELB's) with r,
// net.DefaultResolver when nil, and returns the name as published (lower
// case, no final dot) and its addresses. Its owner may move them at any
// time, so a caller resolves it again every sync, and keeps the name for
// providers that publish an alias to it.
func ResolveHostname(ctx context.Context, r Resolver, hostname string) (string, []netip.Addr, error) {
	name := strings.ToLower(strings.TrimSuffix(hostname, "."))
	if r == nil {
		r = net.DefaultResolver
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(rctx, "ip", name)
	if err != nil {
		return name, nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.Unmap())
	}
	return name, out, nil
}
