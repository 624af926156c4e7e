#!/usr/bin/env bash
# Builds containerd, its runc shim (containerd-shim-runc-v2) and ctr — the
# container runtime of a real dev-bed node (kfed dev up --real-nodes), with
# its CRI plugin — from the Go module proxy at the version pinned in
# hack/containerd/go.mod, and caches them under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kfed/<key>/bin/{containerd,containerd-shim-runc-v2,ctr}
# where <key> changes whenever the pin, go.sum, this script or the Go version
# changes. Static (CGO_ENABLED=0), without the btrfs, devmapper and zfs
# snapshotters (they need cgo and nothing here uses them); runc itself comes
# from Debian (hack/install-runc.sh).
#
# Prints containerd's path on its last line of stdout (the shim and ctr are
# beside it); progress goes to stderr.
#   hack/containerd.sh            build if missing, print the path
#   hack/containerd.sh --print    print the path, build nothing (exit 1 if absent)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/containerd"
version=$(awk '{ if ($1 == "require") $1 = "" ; $0 = $0 } $1 == "github.com/containerd/containerd/v2" { print $2; exit }' "$mod/go.mod")
. "$root/hack/cached-build.sh"
cached_build_begin containerd containerd "$version" containerd "$mod/go.mod" "$mod/go.sum" "$0" -- "$@"
log "building containerd $version into $dir (a cold build takes a few minutes on 2 cores)"
(
	cd "$mod"
	ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$version"
	for c in containerd containerd-shim-runc-v2 ctr; do
		log "building $c"
		CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "$ldflags" \
			-o "$(dirname "$bin")/$c" "github.com/containerd/containerd/v2/cmd/$c"
	done
)
cached_build_end
