package framework

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
)

// InstallGatewayAPI installs the Gateway API standard CRDs (devenv.GatewayAPICRDs:
// the module's own, at the version kfed's types come from) in the named
// clusters ("federation", "cluster-1", …).
func (f *Federation) InstallGatewayAPI(names ...string) {
	f.t.Helper()
	crds, err := devenv.GatewayAPICRDs(f.t.TempDir())
	if err != nil {
		f.t.Fatal(err)
	}
	var where []*devenv.Cluster
	for _, name := range names {
		cl := f.Cluster(name)
		if cl == nil {
			f.t.Fatalf("no cluster %q", name)
		}
		where = append(where, cl)
	}
	// Under make test's load one bed of four took longer than a minute
	// to install them one cluster after another (drain, once).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.InstallCRDsIn(ctx, crds, where...); err != nil {
		f.t.Fatalf("installing the Gateway API CRDs: %v", err)
	}
}

// GatewayBlock is the address block of member i's loopback Gateways: the
// top part of its load balancer's block (loopbacklb.Block), which
// allocates from the bottom.
func (f *Federation) GatewayBlock(i int) netip.Prefix {
	return loopbackgw.BlockBeside(loopbacklb.Block(f.LBBase, i))
}

// StartLoopbackGateways runs the loopback Gateway and Ingress
// implementation (class loopbackgw.ClassName) in every member; the Gateway
// API CRDs must be installed there first (InstallGatewayAPI).
func (f *Federation) StartLoopbackGateways() {
	log := Logger(f.t) // before the cleanup below, so it looks after they stop
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.t.Cleanup(func() { cancel(); wg.Wait() })
	for i, m := range f.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := loopbackgw.Run(ctx, loopbackgw.Options{
				Cluster: m.Name,
				Block:   f.GatewayBlock(i),
				Config:  m.Config,
				Logger:  log.WithName(m.Name + "-gw"),
			})
			if err != nil && ctx.Err() == nil {
				f.t.Errorf("loopback gateways of %s: %v", m.Name, err)
			}
		}()
	}
}
