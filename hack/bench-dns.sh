#!/usr/bin/env bash
# Benchmarks the kfed CoreDNS plugin side by side with CoreDNS's file plugin
# and whoami (the framework's floor), in one CoreDNS binary (./cmd/coredns)
# serving the same names: NAMES federated names (default 10,000) written as
# DNSEndpoints to a real kube-apiserver for kfed, and as a zone file for file.
#
# Method: the server is pinned to CPU 0 with GOMAXPROCS=1, dnsperf to CPU 1;
# throughput is `dnsperf -c 4 -T 1 -q 100 -l DURATION`, RUNS runs per target
# interleaved round-robin with the starting target rotated, reported as median
# and range; latency is measured
# separately at a fixed rate (-Q RATE) from dnsperf's per-query times. The
# throughput runs also give the server's CPU time per query (its threads'
# schedstat), which depends less on what else the machine does. Then
# the resident memory of CoreDNS serving MEM_NAMES names (default 100,000)
# through kfed and through file, 2 s after each serves every name and after
# DURATION seconds of queries, and through kfed with no names.
#
# Needs dnsperf (Debian: apt-get install -y dnsperf), taskset, two CPUs, and
# the test binaries (hack/test-binaries.sh, or $KFED_TEST_BIN).
#
#   hack/bench-dns.sh                 # everything, about 6 minutes
#   MEM_NAMES=0 hack/bench-dns.sh     # without the memory part
#   LOADS=1 MEM_NAMES=0 hack/bench-dns.sh  # with load-weighed tables, cluster-1 spilled
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

NAMES=${NAMES:-10000}
MEM_NAMES=${MEM_NAMES:-100000}
RUNS=${RUNS:-3}
DURATION=${DURATION:-15}
RATE=${RATE:-20000}
# LOADS=1: every Service's clusters carry loads as kfed-controller weighs
# them, cluster-1 (the server's own) spilled: the query path with load on.
LOADS=${LOADS:-0}
loads_flag=()
[ "$LOADS" = 1 ] && loads_flag=(-loads)

for tool in dnsperf taskset; do
	command -v "$tool" >/dev/null || { echo "bench-dns: $tool is missing (apt-get install -y dnsperf util-linux)" >&2; exit 1; }
done
if [ "$(nproc)" -lt 2 ]; then
	echo "bench-dns: needs two CPUs, one for the server and one for dnsperf" >&2
	exit 1
fi
KFED_TEST_BIN=${KFED_TEST_BIN:-$(hack/test-binaries.sh | tail -n 1)}
export KFED_TEST_BIN

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-dns.XXXXXX")
fed_pid="" dns_pid=""
cleanup() {
	[ -n "$dns_pid" ] && kill "$dns_pid" 2>/dev/null && wait "$dns_pid" 2>/dev/null
	[ -n "$fed_pid" ] && kill "$fed_pid" 2>/dev/null && wait "$fed_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

echo "bench-dns: building cmd/coredns and hack/benchdns"
go build -o "$work/coredns" ./cmd/coredns
go build -o "$work/benchdns" ./hack/benchdns
"$work/coredns" -version | head -n 1

# start_federation DIR N starts a control plane holding N names in DIR and
# sources DIR/bench.env (KUBECONFIG, ZONE, FEDERATION, *_PORT).
start_federation() {
	local dir=$1 names=$2
	mkdir -p "$dir"
	# On CPU 1 with dnsperf, so that CPU 0 runs nothing but the server.
	taskset -c 1 "$work/benchdns" -dir "$dir" -names "$names" "${loads_flag[@]}" >"$dir/benchdns.log" 2>&1 &
	fed_pid=$!
	until [ -e "$dir/ready" ]; do
		if ! kill -0 "$fed_pid" 2>/dev/null; then
			echo "bench-dns: the control plane did not start:" >&2
			cat "$dir/benchdns.log" >&2
			exit 1
		fi
		sleep 1
	done
	grep created "$dir/benchdns.log"
	# shellcheck disable=SC1091
	. "$dir/bench.env"
}

stop_federation() {
	kill "$fed_pid"
	wait "$fed_pid" || true
	fed_pid=""
}

# start_coredns COREFILE ADDR N starts CoreDNS pinned to CPU 0 and waits until
# ADDR serves the N names.
start_coredns() {
	taskset -c 0 env GOMAXPROCS=1 "$work/coredns" -conf "$1" >"$1.log" 2>&1 &
	dns_pid=$!
	if ! "$work/benchdns" -probe "$2" -names "$3"; then
		cat "$1.log" >&2
		exit 1
	fi
}

stop_coredns() {
	kill "$dns_pid"
	wait "$dns_pid" || true
	dns_pid=""
}

# kfed_block, file_block and whoami_block are Corefile server blocks.
kfed_block() {
	printf '%s:%s {\n\tbind 127.0.0.1\n\tkfed {\n\t\tfederation %s\n\t\tcluster cluster-1\n\t\tkubeconfig %s federation\n\t}\n}\n' \
		"$ZONE" "$1" "$FEDERATION" "$KUBECONFIG"
}
file_block() {
	printf '%s:%s {\n\tbind 127.0.0.1\n\tfile %s\n}\n' "$ZONE" "$1" "$2"
}
whoami_block() {
	printf '.:%s {\n\tbind 127.0.0.1\n\twhoami\n}\n' "$1"
}

# percentiles LABEL FILE prints p50, p90, p99 and p99.9 of the sorted
# microseconds in FILE.
percentiles() {
	awk -v label="$1" '{v[NR]=$1} END {
		split("0.5 0.9 0.99 0.999", q, " "); split("p50 p90 p99 p99.9", n, " ")
		line = label
		for (i = 1; i <= 4; i++) { k = int(q[i] * NR); if (k < 1) k = 1; line = line sprintf(" %s %.0f", n[i], v[k]) }
		print line sprintf(" (%d queries)", NR)
	}' "$2"
}

median_range() { # numbers on stdin → "median (min–max)"
	sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.0f (%.0f–%.0f)", m, v[1], v[NR]}'
}

# ---- throughput and latency -------------------------------------------------
fed="$work/fed"
start_federation "$fed" "$NAMES"
corefile="$fed/Corefile"
{
	kfed_block "$KFED_PORT"
	file_block "$FILE_PORT" "$fed/db.$ZONE"
	whoami_block "$WHOAMI_PORT"
} >"$corefile"
start_coredns "$corefile" "127.0.0.1:$KFED_PORT" "$NAMES"
"$work/benchdns" -probe "127.0.0.1:$FILE_PORT" -names "$NAMES"

# cpu_ns prints the CPU time the server's threads have used, in ns.
cpu_ns() { cat /proc/"$dns_pid"/task/*/schedstat | awk '{s += $1} END {printf "%.0f\n", s}'; }

declare -A port=([kfed]=$KFED_PORT [file]=$FILE_PORT [whoami]=$WHOAMI_PORT)
targets=(kfed file whoami)
echo "bench-dns: $NAMES names; $RUNS runs of ${DURATION}s per target, interleaved; dnsperf -c 4 -T 1 -q 100"
for run in $(seq "$RUNS"); do
	# Each run starts with the next target, so that no target always follows
	# the same one (file leaves the most garbage behind) or always goes first.
	order=("${targets[@]:$(((run - 1) % 3))}" "${targets[@]:0:$(((run - 1) % 3))}")
	for t in "${order[@]}"; do
		before=$(cpu_ns)
		taskset -c 1 dnsperf -s 127.0.0.1 -p "${port[$t]}" -d "$fed/queries.txt" -c 4 -T 1 -q 100 -l "$DURATION" \
			>"$work/$t.$run.out" 2>&1
		after=$(cpu_ns)
		qps=$(awk '/Queries per second/ {print $4}' "$work/$t.$run.out")
		lost=$(awk '/Queries lost/ {print $3}' "$work/$t.$run.out")
		cpu=$(awk -v ns=$((after - before)) '/Queries completed/ {printf "%.3f", ns / $3 / 1000}' "$work/$t.$run.out")
		echo "$qps" >>"$work/$t.qps"
		echo "$cpu" >>"$work/$t.cpu"
		printf '  run %d %-6s %8.0f qps  %6s µs CPU a query  (lost %s)\n' "$run" "$t" "$qps" "$cpu" "$lost"
	done
done

echo "bench-dns: latency at a fixed $RATE queries per second, ${DURATION}s per target"
for t in "${targets[@]}"; do
	taskset -c 1 dnsperf -s 127.0.0.1 -p "${port[$t]}" -d "$fed/queries.txt" -Q "$RATE" -l "$DURATION" -v \
		>"$work/$t.latency.out" 2>&1
	awk '/^> / {print $NF * 1e6}' "$work/$t.latency.out" | sort -g >"$work/$t.latency"
	percentiles "$(printf '  %-6s µs:' "$t")" "$work/$t.latency"
done
stop_coredns
stop_federation

echo
echo "results ($NAMES names, GOMAXPROCS=1 server on CPU 0, dnsperf on CPU 1; QPS median (min–max) of $RUNS runs)"
for t in "${targets[@]}"; do
	printf '%-6s %s qps\n' "$t" "$(median_range <"$work/$t.qps")"
done
for t in "${targets[@]}"; do
	percentiles "$(printf '%-6s latency at %s qps, µs:' "$t" "$RATE")" "$work/$t.latency"
done
# The machine's speed drifts between runs by more than kfed and whoami
# differ. The server's CPU time per query leaves out time the machine gave to
# others (a VM's steal time included), and a run's two figures, taken a
# minute apart, drift together: compare those.
for t in "${targets[@]}"; do
	printf '%-6s %s ns of server CPU a query\n' "$t" "$(awk '{print $1 * 1000}' "$work/$t.cpu" | median_range)"
done
paste "$work/whoami.cpu" "$work/kfed.cpu" | awk '{print $1 / $2}' |
	sort -g | awk '{v[NR]=$1; if ($1 >= 1) ge++} END {
		m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
		printf "whoami/kfed CPU a query, per run: median %.3f (%.3f–%.3f), kfed cheaper in %d of %d runs\n", m, v[1], v[NR], ge, NR
	}'
paste "$work/kfed.qps" "$work/whoami.qps" | awk '{print $1 / $2}' |
	sort -g | awk '{v[NR]=$1; if ($1 >= 1) ge++} END {
		m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
		printf "kfed/whoami QPS, per run: median %.3f (%.3f–%.3f), kfed ahead in %d of %d runs\n", m, v[1], v[NR], ge, NR
	}'

# ---- resident memory --------------------------------------------------------
if [ "$MEM_NAMES" -gt 0 ]; then
	echo
	echo "bench-dns: resident memory with $MEM_NAMES names (creating them takes a while)"
	mem="$work/mem"
	start_federation "$mem" "$MEM_NAMES"
	rss() { awk '/VmRSS/ {printf "%.0f MiB", $2/1024}' "/proc/$dns_pid/status"; }
	kfed_block "$KFED_PORT" >"$mem/Corefile.kfed"
	# Under queries too: the garbage each reply leaves grows the heap to the
	# collector's goal (twice the live heap by default), which an idle
	# server may not have reached since its first list.
	loaded() {
		taskset -c 1 dnsperf -s 127.0.0.1 -p "$1" -d "$mem/queries.txt" -c 4 -T 1 -q 100 -l "$DURATION" >/dev/null 2>&1
		echo "memory $2 $MEM_NAMES names after ${DURATION}s of queries: $(rss)"
	}
	start_coredns "$mem/Corefile.kfed" "127.0.0.1:$KFED_PORT" "$MEM_NAMES"
	sleep 2
	echo "memory kfed   $MEM_NAMES names: $(rss)"
	loaded "$KFED_PORT" "kfed  "
	stop_coredns
	file_block "$FILE_PORT" "$mem/db.$ZONE" >"$mem/Corefile.file"
	start_coredns "$mem/Corefile.file" "127.0.0.1:$FILE_PORT" "$MEM_NAMES"
	sleep 2
	echo "memory file   $MEM_NAMES names: $(rss)"
	loaded "$FILE_PORT" "file  "
	stop_coredns
	FEDERATION=none kfed_block "$KFED_PORT" >"$mem/Corefile.empty"
	start_coredns "$mem/Corefile.empty" "127.0.0.1:$KFED_PORT" 0
	sleep 2
	echo "memory kfed   no names:        $(rss)"
	stop_coredns
	stop_federation
fi

kfed_qps=$(median_range <"$work/kfed.qps" | awk '{print $1}')
file_qps=$(median_range <"$work/file.qps" | awk '{print $1}')
echo
awk -v k="$kfed_qps" -v f="$file_qps" 'BEGIN {printf "ratio kfed/file %.2f\n", k / f}'
