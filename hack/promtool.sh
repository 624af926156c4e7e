#!/usr/bin/env bash
# Builds Prometheus's promtool — which the tests use to check and unit-test
# the alerting rules in deploy/chart/kfed/files/alerts.yaml — and two helpers
# of hack/promtool: metricnames (Prometheus's PromQL parser, to list the
# metrics the dashboard and the alerts query) and grafanadashboard (checks
# deploy/chart/kfed/files/dashboard.json against a typed dashboard model),
# from the Go module proxy at the versions pinned in hack/promtool/go.mod, and
# caches them under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kfed/<key>/bin/
# where <key> changes whenever the pin, go.sum, the helper, this script or the
# Go version changes.
#
# Prints promtool's path on its last line of stdout (the helpers are beside
# it); progress goes to stderr.
#   hack/promtool.sh            build if missing, print the path
#   hack/promtool.sh --print    print the path, build nothing (exit 1 if absent)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/promtool"
version=$(awk '$1 == "github.com/prometheus/prometheus" { print $2; exit }' "$mod/go.mod")
if [ -z "$version" ]; then
	version=$(awk '$1 == "require" && $2 == "github.com/prometheus/prometheus" { print $3; exit }' "$mod/go.mod")
fi
. "$root/hack/cached-build.sh"
cached_build_begin promtool promtool "$version" promtool "$mod/go.mod" "$mod/go.sum" "$mod"/metricnames/*.go "$mod"/grafanadashboard/*.go "$0" -- "$@"
log "building promtool $version into $dir (a cold build takes several minutes on 2 cores)"
(
	cd "$mod"
	# remove_all_sd leaves out Prometheus's service discovery plugins (AWS,
	# Azure, GCE, ...): the tests check and unit-test rules only, and the
	# build is much smaller.
	CGO_ENABLED=0 go build -trimpath -tags remove_all_sd -ldflags "-s -w" -o "$bin" github.com/prometheus/prometheus/cmd/promtool
	CGO_ENABLED=0 go build -trimpath -o "$dir/bin/metricnames" ./metricnames
	CGO_ENABLED=0 go build -trimpath -o "$dir/bin/grafanadashboard" ./grafanadashboard
)
cached_build_end
