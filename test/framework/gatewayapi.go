package framework

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2/textlogger"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
)

// gatewayAPICRDs are the Gateway API standard CRDs kfed federates or reads
// (Gateways, their classes and routes, and the grants routes may need).
var gatewayAPICRDs = []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants"}

// InstallGatewayAPI installs the Gateway API standard CRDs, from the
// config/crd/standard folder of the sigs.k8s.io/gateway-api module that
// go.mod names, in the named clusters ("federation", "cluster-1", …): the
// CRDs are the module's own, at the version kfed's types come from.
func (f *Federation) InstallGatewayAPI(names ...string) {
	f.t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = RepoRoot(f.t)
	out, err := cmd.Output()
	if err != nil {
		f.t.Fatalf("locating the sigs.k8s.io/gateway-api module: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	// InstallCRDs takes every YAML file of a folder; the module's folder
	// also holds an admission policy, so the CRDs are copied apart.
	dir := f.t.TempDir()
	for _, name := range gatewayAPICRDs {
		file := "gateway.networking.k8s.io_" + name + ".yaml"
		data, err := os.ReadFile(filepath.Join(src, file))
		if err != nil {
			f.t.Fatalf("reading the Gateway API CRDs: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range names {
		cl := f.Cluster(name)
		if cl == nil {
			f.t.Fatalf("no cluster %q", name)
		}
		if err := devenv.InstallCRDs(ctx, cl.Config, os.DirFS(dir)); err != nil {
			f.t.Fatalf("installing the Gateway API CRDs in %s: %v", name, err)
		}
	}
}

// GatewayBlock is the address block of member i's loopback Gateways: the
// top part of its load balancer's block (loopbacklb.Block), which
// allocates from the bottom.
func (f *Federation) GatewayBlock(i int) netip.Prefix {
	b := loopbacklb.Block(f.LBBase, i).Addr().As4()
	b[2] = 200
	return netip.PrefixFrom(netip.AddrFrom4(b), 24)
}

// StartLoopbackGateways runs the loopback Gateway and Ingress
// implementation (class loopbackgw.ClassName) in every member; the Gateway
// API CRDs must be installed there first (InstallGatewayAPI).
func (f *Federation) StartLoopbackGateways() {
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
				Logger:  textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(LogWriter(f.t)))).WithName(m.Name + "-gw"),
			})
			if err != nil && ctx.Err() == nil {
				f.t.Errorf("loopback gateways of %s: %v", m.Name, err)
			}
		}()
	}
}
