package framework

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kfed-io/kfed/devenv"
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
