#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one at a time (go test -fuzz takes
# one package and one target per run), each for FUZZTIME: a duration ("5s",
# "2m") or an execution count ("10000000x"). Prints a line per target:
# executions, seconds, executions per second and the result, and exits
# non-zero if any target failed. A failing input is written by go test under
# the package's testdata/fuzz/<Target>/, where it stays a regression test.
#
#   hack/fuzz.sh                      # FUZZTIME, default 5000x per target
#   FUZZTIME=2m hack/fuzz.sh          # two minutes each (make fuzz)
#   FUZZTIME=10000000x hack/fuzz.sh   # the recorded run (docs/reliability.md)
#   hack/fuzz.sh FuzzSet FuzzRead     # only these targets
#
# A count is the default, and what `make test` uses, because a duration can
# fail a target that found nothing: Go's fuzzing coordinator (go1.26) can
# report its own -fuzztime deadline as the error "context deadline exceeded"
# (go.dev/issue/75804, fixed in go1.27). A count sets no deadline. A count
# includes the corpus's baseline run. When a duration run ends that way with
# no failing input written, it is reported as "ok (deadline, go#75804)"
# rather than FAIL; any other failure, or one that wrote an input, fails.
#
# FUZZPARALLEL sets go test -parallel (default 1: the figures in
# docs/reliability.md are for one worker).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzztime=${FUZZTIME:-5000x}
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

# coordinator_deadline LOG TARGET: whether the run failed only because the
# fuzzing coordinator reported its own -fuzztime deadline: the target's
# failure is the bare line "context deadline exceeded" (a target's own error
# carries its file:line), and no failing input was written.
coordinator_deadline() {
	! grep -q 'Failing input written to' "$1" &&
		grep -A1 -- "^--- FAIL: $2 " "$1" | tail -n 1 | grep -qx $'[ \t]*context deadline exceeded'
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
	if [ "$result" = FAIL ] && coordinator_deadline "$log" "$target"; then
		result="ok (deadline, go#75804)"
	fi
	ms=$((($(date +%s%N) - start) / 1000000))
	# No count when the run ended while still reading the cached corpus.
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
	execs=${execs:-0}
	printf '%-40s %-30s %12s %8s %10s  %s\n' "$pkg" "$target" "$execs" \
		"$((ms / 1000)).$((ms % 1000 / 100))" "$((execs * 1000 / (ms > 0 ? ms : 1)))" "$result"
	if [ "$result" = FAIL ]; then
		failed=1
		grep -v '^fuzz: elapsed' "$log" | head -n 40 >&2
	fi
	rm -f "$log"
done < <(targets)
exit "$failed"
