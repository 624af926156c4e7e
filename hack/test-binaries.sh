#!/usr/bin/env bash
# Builds the binaries the test bed runs — kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd and kwok — from the Go module proxy, at the versions
# pinned in hack/k8s/go.mod and hack/kwok/go.mod, and caches them under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kfed/<key>/bin
# where <key> changes whenever a pin or the Go version changes. A second run
# costs nothing. Nothing is downloaded but Go modules.
#
# Prints the bin folder on its last line of stdout; progress goes to stderr.
#   hack/test-binaries.sh            build if missing, print the folder
#   hack/test-binaries.sh --print    print the folder, build nothing (exit 1 if absent)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# modver FILE MODULE: the version FILE requires MODULE at, from a block or a one-line require.
modver() { awk -v m="$2" '{ if ($1 == "require") { $1 = "" ; $0 = $0 } } $1 == m { print $2; exit }' "$1"; }
k8s_version=$(modver "$root/hack/k8s/go.mod" k8s.io/kubernetes)
etcd_version=$(modver "$root/hack/k8s/go.mod" go.etcd.io/etcd/server/v3)
kwok_version=$(modver "$root/hack/kwok/go.mod" sigs.k8s.io/kwok)
go_version=$(go env GOVERSION)
sum=$(cat "$root/hack/k8s/go.mod" "$root/hack/k8s/go.sum" "$root/hack/kwok/go.mod" "$root/hack/kwok/go.sum" \
	"$root/hack/k8s/etcd/main.go" "$0" | sha256sum | cut -c1-12)
key="k8s-${k8s_version}_etcd-${etcd_version}_kwok-${kwok_version}_${go_version}_${sum}"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/kfed/$key"
bin="$dir/bin"

want=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)
complete() {
	local b
	for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done
	[ -f "$dir/.complete" ]
}

if complete; then
	echo "$bin"
	exit 0
fi
if [ "${1:-}" = "--print" ]; then
	echo "test binaries not built; run hack/test-binaries.sh" >&2
	exit 1
fi

start=$(date +%s)
log() { echo "hack/test-binaries: [$(($(date +%s) - start))s] $*" >&2; }
mkdir -p "$bin"
export CGO_ENABLED=0
ver="-X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1"
ver="$ver -X k8s.io/component-base/version.gitMinor=$(echo "$k8s_version" | cut -d. -f2)"
ver="$ver -X k8s.io/client-go/pkg/version.gitVersion=${k8s_version}"

log "building into $bin (a cold build takes 10-15 minutes on 2 cores)"
(
	cd "$root/hack/k8s"
	log "downloading modules for Kubernetes $k8s_version and etcd $etcd_version"
	go mod download
	for c in kube-apiserver kubectl kube-controller-manager kube-scheduler; do
		log "building $c"
		go build -trimpath -ldflags "-s -w $ver" -o "$bin/$c" "k8s.io/kubernetes/cmd/$c"
	done
	log "building etcd"
	go build -trimpath -ldflags "-s -w" -o "$bin/etcd" ./etcd
)
(
	cd "$root/hack/kwok"
	log "building kwok $kwok_version"
	go build -trimpath -ldflags "-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok
)
touch "$dir/.complete"
log "done in $(($(date +%s) - start))s"
echo "$bin"
