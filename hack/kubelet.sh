#!/usr/bin/env bash
# Builds the kubelet and kube-proxy — which a real node of the dev bed runs
# (kfed dev up --real-nodes) — from the Go module proxy at the Kubernetes
# version pinned in hack/kubelet/go.mod (the same as hack/k8s's), and caches
# them under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kfed/<key>/bin/{kubelet,kube-proxy}
# where <key> changes whenever the pin, go.sum, this script or the Go version
# changes. A module apart from hack/k8s, because the kubelet needs modules
# (cadvisor, the CRI client) the other binaries do not: adding them to
# hack/k8s would rebuild every test binary.
#
# Prints the kubelet's path on its last line of stdout (kube-proxy is beside
# it); progress goes to stderr.
#   hack/kubelet.sh            build if missing, print the path
#   hack/kubelet.sh --print    print the path, build nothing (exit 1 if absent)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/kubelet"
version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$mod/go.mod")
. "$root/hack/cached-build.sh"
cached_build_begin kubelet kubelet "$version" kubelet "$mod/go.mod" "$mod/go.sum" "$0" -- "$@"
log "building the kubelet and kube-proxy $version into $dir (a cold build takes a few minutes on 2 cores)"
(
	cd "$mod"
	# As hack/test-binaries.sh does: the version the kubelet reports as the
	# node's kubeletVersion, without which it is v0.0.0-master.
	ver="-X k8s.io/component-base/version.gitVersion=${version} -X k8s.io/component-base/version.gitMajor=1"
	ver="$ver -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)"
	ver="$ver -X k8s.io/client-go/pkg/version.gitVersion=${version}"
	for c in kubelet kube-proxy; do
		log "building $c"
		CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ver" -o "$(dirname "$bin")/$c" "k8s.io/kubernetes/cmd/$c"
	done
)
cached_build_end
