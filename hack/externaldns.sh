#!/usr/bin/env bash
# Builds ExternalDNS — which the e2e tests run to prove that kfed's
# DNSEndpoints publish through it (ADR 0003) — from the Go module proxy at the
# version pinned in hack/externaldns/go.mod, and caches it under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kfed/<key>/bin/external-dns
# where <key> changes whenever the pin, go.sum, this script or the Go version
# changes. ExternalDNS v0.22.0's own go.mod pins two module versions the proxy
# does not serve; hack/externaldns/go.mod replaces them with served ones.
#
# Prints the binary's path on its last line of stdout; progress goes to stderr.
#   hack/externaldns.sh            build if missing, print the path
#   hack/externaldns.sh --print    print the path, build nothing (exit 1 if absent)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/externaldns"
version=$(awk '$1 == "sigs.k8s.io/external-dns" { print $2; exit }' "$mod/go.mod")
. "$root/hack/cached-build.sh"
cached_build_begin externaldns ExternalDNS "$version" external-dns "$mod/go.mod" "$mod/go.sum" "$0" -- "$@"
log "building ExternalDNS $version into $dir (a cold build takes about 5 minutes on 2 cores)"
(
	cd "$mod"
	CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version=$version" \
		-o "$bin" sigs.k8s.io/external-dns
)
cached_build_end
