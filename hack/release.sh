#!/usr/bin/env bash
# make release: the kfed CLI for the systems people run it from, the Helm
# chart packaged at the same version, and SHA256SUMS of them, in bin/release/.
# VERSION and LDFLAGS come from the Makefile, so the binaries report the
# version `make images` tags the images with, and the packaged chart's
# appVersion (the image tag it pulls by default) is that version too.
#   RELEASE_PLATFORMS="linux/amd64 darwin/arm64" make release   # fewer
#   RELEASE_OUT=DIR make release                                # elsewhere
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
: "${VERSION:?VERSION is not set (run make release)}" "${LDFLAGS:?LDFLAGS is not set (run make release)}"
out=${RELEASE_OUT:-bin/release}
platforms=${RELEASE_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}

rm -rf "$out"
mkdir -p "$out"
for p in $platforms; do
	os=${p%/*} arch=${p#*/} ext=
	[[ $os == windows ]] && ext=.exe
	echo "== kfed $VERSION for $os/$arch" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$LDFLAGS" -o "$out/kfed-$VERSION-$os-$arch$ext" ./cmd/kfed
done

# A chart's version must be SemVer 2: v1.2.3 and v1.2.3-4-gHASH lose their
# v; a bare commit (no v* tag yet) becomes 0.0.0-gHASH, as git describe
# names commits (a HASH of digits with a leading 0 is no SemVer identifier).
chart_version=${VERSION#v}
if ! [[ $chart_version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then
	chart_version=0.0.0-g$chart_version
fi
helm=${KFED_HELM:-$(hack/helm.sh | tail -n 1)}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
echo "== chart $chart_version (appVersion $VERSION)" >&2
HELM_CACHE_HOME=$home/cache HELM_CONFIG_HOME=$home/config HELM_DATA_HOME=$home/data \
	"$helm" package deploy/chart/kfed --version "$chart_version" --app-version "$VERSION" -d "$out" >&2

(cd "$out" && sha256sum -- * >SHA256SUMS)
echo "== $out:" >&2
ls -l "$out" >&2
