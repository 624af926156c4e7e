#!/usr/bin/env bash
# Runs the Multi-Cluster Services API conformance suite (kubernetes-sigs/mcs-api
# conformance/, kept unchanged in ../shared/third_party/mcs-api-conformance: an
# outside judge) against `kfed dev up`'s three members. This is what
# `make conformance` runs.
#
# It builds kfed and the suite's test binary into $OUT (default bin/conformance;
# the suite's folder is read-only), starts kfed dev up there in the background,
# waits for its "kfed dev: ready" line, runs the tests this test bed can run
# (README, "Multi-Cluster Services"), keeps report.html and report.yaml in $OUT,
# and stops kfed dev up. It exits non-zero when a test fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

SUITE=${KFED_MCS_CONFORMANCE:-$root/../shared/third_party/mcs-api-conformance}
OUT=${OUT:-$root/bin/conformance}
# The Required tests that need no pod to run a command (DNS, connectivity and
# "should be inaccessible" exec into a pod: real nodes only), and the Optional
# EndpointSlice and ExportedLabels tests.
FILTER=${KFED_CONFORMANCE_FILTER:-'(Required || (Optional && (EndpointSlice || ExportedLabels))) && !DNS && !Connectivity'}
SKIP=${KFED_CONFORMANCE_SKIP:-'Connectivity to a service that is not exported'}

mkdir -p "$OUT"
export KFED_BIN=${KFED_BIN:-$(hack/test-binaries.sh | tail -n 1)}
go build -o "$OUT/" ./cmd/kfed ./cmd/coredns ./cmd/kfed-healthcheck
(cd "$SUITE" && go test -c -o "$OUT/mcs-conformance.test" .)

dev="$OUT/dev"
rm -rf "$dev"
"$OUT/kfed" dev up --dir "$dev" --lb-base "${KFED_CONFORMANCE_LB_BASE:-170}" >"$OUT/dev-up.log" 2>&1 &
devpid=$!
stop() {
	kill -TERM "$devpid" 2>/dev/null || true
	wait "$devpid" 2>/dev/null || true
}
trap stop EXIT

for _ in $(seq 1 600); do
	grep -q '^kfed dev: ready' "$OUT/dev-up.log" && break
	if ! kill -0 "$devpid" 2>/dev/null; then
		echo "kfed dev up stopped before it was ready:" >&2
		tail -n 30 "$OUT/dev-up.log" >&2
		exit 1
	fi
	sleep 1
done
grep -q '^kfed dev: ready' "$OUT/dev-up.log" || { echo "kfed dev up was not ready within 10 minutes" >&2; exit 1; }

cd "$OUT"
status=0
./mcs-conformance.test -test.timeout 60m -kubeconfig "$dev/kubeconfig" \
	-contexts cluster-1,cluster-2,cluster-3 \
	-ginkgo.label-filter="$FILTER" -ginkgo.skip="$SKIP" -ginkgo.v \
	-project kfed -url https://github.com/kfed-io/kfed \
	-version "$(git -C "$root" describe --tags --match 'v*' --always --dirty 2>/dev/null || echo unknown)" || status=$?
echo "conformance: report in $OUT/report.html and $OUT/report.yaml"
exit "$status"
