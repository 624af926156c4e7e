package devenv

import (
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// gatewayAPIModule is the module kfed's Gateway API types come from.
const gatewayAPIModule = "sigs.k8s.io/gateway-api"

// gatewayAPICRDs are the Gateway API standard CRDs kfed federates or reads
// (Gateways, their classes and routes, and the grants routes may need).
var gatewayAPICRDs = []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants"}

// GatewayAPICRDs copies the Gateway API standard CRDs into dir and returns
// them for InstallCRDs: the CRDs of the sigs.k8s.io/gateway-api module this
// binary was built with, from the Go module cache the build read it from
// (make dev and the tests build from source, so it is there). kfed ships no
// copy of them: they are the module's own, at the version of its types.
func GatewayAPICRDs(dir string) (fs.FS, error) {
	src, err := gatewayAPIDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, name := range gatewayAPICRDs {
		// The folder holds an admission policy too, which InstallCRDs
		// would take for a CRD: only the CRDs are copied.
		file := "gateway.networking.k8s.io_" + name + ".yaml"
		data, err := os.ReadFile(filepath.Join(src, file))
		if err != nil {
			return nil, fmt.Errorf("reading the Gateway API CRDs: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			return nil, err
		}
	}
	return os.DirFS(dir), nil
}

// gatewayAPIDir is the module's config/crd/standard folder in the module
// cache: at the version in this binary's build information, or, where the
// binary has none (a test binary), where the go command finds the module
// from the working directory.
func gatewayAPIDir() (string, error) {
	version := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == gatewayAPIModule {
				version = d.Version
				if d.Replace != nil {
					version = d.Replace.Version
				}
			}
		}
	}
	var dir string
	if version != "" {
		dir = filepath.Join(moduleCache(), filepath.FromSlash(gatewayAPIModule)+"@"+version)
	} else {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", gatewayAPIModule).Output()
		if err != nil {
			return "", fmt.Errorf("locating %s (this binary names no version of it, and go list could not find it): %w", gatewayAPIModule, err)
		}
		dir = strings.TrimSpace(string(out))
	}
	dir = filepath.Join(dir, "config", "crd", "standard")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("the Gateway API CRDs of %s %s are not in the Go module cache (go mod download %s): %w",
			gatewayAPIModule, version, gatewayAPIModule, err)
	}
	return dir, nil
}

// moduleCache is the Go module cache: $GOMODCACHE, what `go env` says, or
// GOPATH's.
func moduleCache() string {
	if d := os.Getenv("GOMODCACHE"); d != "" {
		return d
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		return strings.TrimSpace(string(out))
	}
	return filepath.Join(build.Default.GOPATH, "pkg", "mod")
}
