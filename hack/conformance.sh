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
#
# With KFED_CONFORMANCE_REAL_NODES=1 (make conformance-nodes; Linux, root) the
# members get real nodes (kfed dev up --real-nodes, built as make dev-nodes
# does; OUT defaults to bin/conformance-nodes), the suite's pods are scheduled
# there rather than on the simulated nodes, and the tests that exec into a pod
# run too: DNS, connectivity and "should be inaccessible".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

SUITE=${KFED_MCS_CONFORMANCE:-$root/../shared/third_party/mcs-api-conformance}
REAL_NODES=${KFED_CONFORMANCE_REAL_NODES:-}
if [[ -n $REAL_NODES ]]; then
	OUT=${OUT:-$root/bin/conformance-nodes}
	# Every Required test, and the Optional ones kfed implements.
	FILTER=${KFED_CONFORMANCE_FILTER:-'Required || (Optional && (EndpointSlice || ExportedLabels || DNS || Connectivity))'}
	SKIP=${KFED_CONFORMANCE_SKIP:-}
else
	OUT=${OUT:-$root/bin/conformance}
	# The Required tests that need no pod to run a command (DNS, connectivity and
	# "should be inaccessible" exec into a pod: real nodes only), and the Optional
	# EndpointSlice and ExportedLabels tests.
	FILTER=${KFED_CONFORMANCE_FILTER:-'(Required || (Optional && (EndpointSlice || ExportedLabels))) && !DNS && !Connectivity'}
	SKIP=${KFED_CONFORMANCE_SKIP:-'Connectivity to a service that is not exported'}
fi

mkdir -p "$OUT"
export KFED_BIN=${KFED_BIN:-$(hack/test-binaries.sh | tail -n 1)}
go build -o "$OUT/" ./cmd/kfed ./cmd/coredns ./cmd/kfed-healthcheck
(cd "$SUITE" && go test -c -o "$OUT/mcs-conformance.test" .)
up=()
if [[ -n $REAL_NODES ]]; then
	# What kfed dev up --real-nodes finds beside itself and in the environment.
	go build -tags kubernetes -o "$OUT/coredns-kubernetes" ./cmd/coredns
	hack/install-cni.sh >/dev/null
	go run ./hack/nodeimages -out "$OUT/nodeimages" >/dev/null
	KFED_RUNC=$(hack/install-runc.sh)
	KFED_KUBELET_BIN=$(dirname "$(hack/kubelet.sh | tail -n 1)")
	KFED_CONTAINERD_BIN=$(dirname "$(hack/containerd.sh | tail -n 1)")
	export KFED_RUNC KFED_KUBELET_BIN KFED_CONTAINERD_BIN
	up=(--real-nodes)
fi

dev="$OUT/dev"
rm -rf "$dev"
"$OUT/kfed" dev up --dir "$dev" --lb-base "${KFED_CONFORMANCE_LB_BASE:-170}" "${up[@]}" >"$OUT/dev-up.log" 2>&1 &
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

if [[ -n $REAL_NODES ]]; then
	# The suite's pods name no node: the scheduler places them on the real
	# node once it is the only one that takes new pods (the demo's simulated
	# pods stay where they are).
	for c in cluster-1 cluster-2 cluster-3; do
		k=("$KFED_BIN/kubectl" --kubeconfig "$dev/kubeconfig" --context "$c")
		"${k[@]}" taint nodes -l type=kwok kfed.io/simulated=true:NoSchedule >/dev/null
		"${k[@]}" taint nodes -l kfed.io/real-node=true kfed.io/real-node:NoSchedule- >/dev/null
	done
fi

cd "$OUT"
status=0
./mcs-conformance.test -test.timeout 60m -kubeconfig "$dev/kubeconfig" \
	-contexts cluster-1,cluster-2,cluster-3 \
	-ginkgo.label-filter="$FILTER" -ginkgo.skip="$SKIP" -ginkgo.v \
	-project kfed -url https://github.com/kfed-io/kfed \
	-version "$(git -C "$root" describe --tags --match 'v*' --always --dirty 2>/dev/null || echo unknown)" || status=$?
echo "conformance: report in $OUT/report.html and $OUT/report.yaml"
exit "$status"
