#!/usr/bin/env bash
# Builds Helm — which the chart tests run (helm lint, helm template) against
# deploy/chart/kfed — from the Go module proxy at the version pinned in
# hack/helm/go.mod, and caches it under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kfed/<key>/bin/helm
# where <key> changes whenever the pin, go.sum, this script or the Go version
# changes. A separate module keeps Helm's dependencies out of kfed's go.mod.
#
# Prints the binary's path on its last line of stdout; progress goes to stderr.
#   hack/helm.sh            build if missing, print the path
#   hack/helm.sh --print    print the path, build nothing (exit 1 if absent)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/helm"
version=$(awk '$1 == "helm.sh/helm/v3" { print $2; exit }' "$mod/go.mod")
. "$root/hack/cached-build.sh"
cached_build_begin helm Helm "$version" helm "$mod/go.mod" "$mod/go.sum" "$0" -- "$@"
log "building Helm $version into $dir (a cold build takes a few minutes on 2 cores)"
(
	cd "$mod"
	# As Helm's Makefile does: its version, and the Kubernetes version that
	# helm template and lint assume (from client-go v0.N: 1.N), without which
	# Helm assumes 1.20 and rejects the chart's kubeVersion.
	minor=$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
	for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
		ldflags="$ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
	done
	CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin" helm.sh/helm/v3/cmd/helm
)
cached_build_end
