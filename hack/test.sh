#!/usr/bin/env bash
# Runs every test: unit tests, and e2e suites against real kube-apiserver,
# etcd, scheduler and KWOK processes (built once by hack/test-binaries.sh and
# cached), a real BIND (installed from Debian by hack/install-bind.sh), Knot DNS
# (hack/install-knot.sh), Unbound (hack/install-unbound.sh), a real ExternalDNS (built once by hack/externaldns.sh and cached) and
# Prometheus's promtool (hack/promtool.sh, likewise).
# This is what `make test` and CI run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

KFED_TEST_BIN=$(hack/test-binaries.sh | tail -n 1)
export KFED_TEST_BIN
# The RFC 2136 tests run a real BIND (Debian's bind9).
hack/install-bind.sh >/dev/null
# The health-check e2e partitions a checker with an nftables rule.
hack/install-nftables.sh >/dev/null
# The ExternalDNS e2e runs the real ExternalDNS, built from the module proxy.
KFED_EXTERNALDNS=$(hack/externaldns.sh | tail -n 1)
export KFED_EXTERNALDNS
# The chart tests run helm lint and helm template, built from the module proxy.
KFED_HELM=$(hack/helm.sh | tail -n 1)
export KFED_HELM
# The plugin's zone transfers are tested with a Knot DNS secondary too.
hack/install-knot.sh >/dev/null
# test/monitoring checks the alerting rules with promtool, built from the module proxy.
KFED_PROMTOOL=$(hack/promtool.sh | tail -n 1)
export KFED_PROMTOOL
# The fault suite (test/reliability) restarts CoreDNS under dnsperf's load.
hack/install-dnsperf.sh >/dev/null
# The failover benchmark's client resolves through a real Unbound.
hack/install-unbound.sh >/dev/null
# test/pods and the images e2e run kfed's images under runc.
hack/install-runc.sh >/dev/null

# Build the tests as the images are built (hack/images: CGO_ENABLED=0,
# -trimpath), and so share one compile of every package with the images test
# and with the binaries the e2e tests build; with Go's defaults (cgo on, full
# paths) a run from empty caches compiled client-go and CoreDNS twice.
export CGO_ENABLED=0
# -ldflags=-w: test binaries without DWARF (stack traces keep their lines)
# link in two thirds of the CPU; a command's own -ldflags still wins.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath -ldflags=-w"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './hack/*'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
go vet -tags kubernetes ./cmd/coredns # the build that can be a cluster's own DNS

# kfed's binaries the tests run (CoreDNS with the plugin, the controller,
# the checker, the CLI, the credential plugin of test/e2e/inventory), built
# for the run into a folder of this checkout's: test/framework.Build uses it
# instead of linking them again in each test. go build links again only a
# binary whose build ID (its code, its dependencies', the flags) changed;
# the folder is keyed by the checkout's path, so that two checkouts tested
# side by side never run each other's binaries.
# A folder no run has used for two days (a checkout gone) is removed.
cmds=${XDG_CACHE_HOME:-$HOME/.cache}/kfed/test-cmds
KFED_TEST_CMDS=$cmds/$(pwd -P | sha256sum | cut -c1-12)
mkdir -p "$KFED_TEST_CMDS"
touch "$KFED_TEST_CMDS"
find "$cmds" -mindepth 1 -maxdepth 1 -type d -mtime +1 -exec rm -rf {} +
export KFED_TEST_CMDS
go build -o "$KFED_TEST_CMDS/" ./cmd/coredns ./cmd/kfed-controller ./cmd/kfed-healthcheck ./cmd/kfed ./test/secretreader

# Two kinds of tests, in two go test commands side by side:
# - Packages whose tests start servers (kube-apiserver, etcd, BIND, runc,
#   kfed's own binaries) run every time (-count=1): Go's test cache sees
#   the files a test opens and the variables it reads, not a server's
#   binary or state. -p 4: an e2e package mostly waits (probe intervals,
#   Leases, sync passes) and keeps about half a core busy, so four side by
#   side keep this size of machine's two cores busy without starving the
#   API servers. go test starts packages in the order named, so they come
#   longest first (as measured under this load: BENCHMARKS.md, "The test
#   loop"), and the last to start are short; ./test/... takes any new
#   package there.
# - The others test code alone. Their results come from go test's cache
#   when none of their inputs changed (their code and their dependencies',
#   the testdata they open, the environment variables they read), as a
#   plain go test ./... would: such a package is neither linked nor run
#   again.
servers=(./test/e2e/health ./test/reliability ./test/e2e/release ./test/e2e/services ./test/e2e/controller
	./test/e2e/scale ./test/e2e/deployments ./test/e2e/mcs ./test/e2e/dns ./test/e2e/identity ./test/e2e/gateways
	./cmd/kfed ./test/e2e/check ./test/e2e/drain ./healthcheck/agent ./test/e2e/explain ./test/e2e/fleet
	./test/e2e/clustersetdns ./hack/images ./test/monitoring ./test/... ./dns/dnssync ./dns/dnsprovider/rfc2136
	./devenv ./devenv/process)
mapfile -t units < <(go list ./... | grep -v -x -F -f <(go list "${servers[@]}"))
go test -count=1 -p 4 -timeout 25m "$@" "${servers[@]}" &
serversPID=$!
rc=0
go test -p 2 -timeout 10m "$@" "${units[@]}" || rc=$?
wait "$serversPID" || rc=$?
if [ "$rc" -ne 0 ]; then
	exit "$rc"
fi
# Every fuzz target for 5,000 executions on two workers, once nothing else
# runs (58 CPU-s: run beside the servers' tests, it slowed them as much as
# it saved); `make fuzz` runs them longer.
FUZZTIME=5000x FUZZPARALLEL=2 hack/fuzz.sh
