#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one at a time (go test -fuzz takes
# one package and one target per run), each for FUZZTIME: a duration ("5s",
# "2m") or an execution count ("10000000x"). Prints a line per target:
# executions, seconds, executions per second and the result, and exits
# non-zero if any target failed. A failing input is written by go test under
# the package's testdata/fuzz/<Target>/, where it stays a regression test.
#
#   hack/fuzz.sh                      # FUZZTIME, default 2s per target
#   FUZZTIME=10000000x hack/fuzz.sh   # the recorded run (docs/reliability.md)
#   hack/fuzz.sh FuzzSet FuzzRead     # only these targets
#
# FUZZPARALLEL sets go test -parallel (default 1: the figures in
# docs/reliability.md are for one worker).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzztime=${FUZZTIME:-2s}
parallel=${FUZZPARALLEL:-1}

# The targets, as "package Target" lines: what `go test -list '^Fuzz'` would
# print for each package, read from the sources so that listing costs no
# build.
targets() {
	git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | while read -r file; do
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$file" | while read -r name; do
			echo "./$(dirname "$file") $name"
		done
	done | sort -u
}

only=" $* "
failed=0
printf '%-40s %-30s %12s %8s %10s  %s\n' package target execs seconds execs/s result
while read -r pkg target; do
	if [ -n "${only// /}" ] && [[ "$only" != *" $target "* ]]; then
		continue
	fi
	log=$(mktemp)
	start=$(date +%s%N)
	result=ok
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel "$parallel" "$pkg" </dev/null >"$log" 2>&1 || result=FAIL
	ms=$((($(date +%s%N) - start) / 1000000))
	# No count when the run ended while still reading the cached corpus.
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
	execs=${execs:-0}
	printf '%-40s %-30s %12s %8s %10s  %s\n' "$pkg" "$target" "$execs" \
		"$((ms / 1000)).$((ms % 1000 / 100))" "$((execs * 1000 / (ms > 0 ? ms : 1)))" "$result"
	if [ "$result" != ok ]; then
		failed=1
		grep -v '^fuzz: elapsed' "$log" | head -n 40 >&2
	fi
	rm -f "$log"
done < <(targets)
exit "$failed"
