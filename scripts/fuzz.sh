#!/usr/bin/env bash
# fuzz.sh TIME: runs every fuzz target of the repository (each func FuzzX
# in a _test.go file that git tracks), one after the other since go test
# takes one -fuzz at a time, TIME each in fuzzing mode (go test -fuzz
# -fuzztime TIME). It fails when any target fails: an input that panics,
# breaks an assertion (each target asserts that its known-good seeds
# decode, so a target gone blind fails at once) or takes longer than
# internal/fuzztest.Limit. A failing input is saved under the package's
# testdata/fuzz/FuzzX/, as go test does. Ends with a table: per target,
# the executions, the new inputs found and the outcome.
#
# FUZZMINIMIZETIME bounds the engine's minimising of each new input (go's
# default, 60 s, stalls a short run on one large input); FUZZPARALLEL the
# workers (default: go's, the number of CPUs); FUZZ_ONLY, a regular
# expression, keeps the targets whose "./package FuzzX" it matches.
set -uo pipefail
cd "$(dirname "$0")/.."
time=${1:-60s}
go=${GO:-go}
minimize=${FUZZMINIMIZETIME:-5s}
parallel=()
if [ -n "${FUZZPARALLEL:-}" ]; then parallel=(-parallel "$FUZZPARALLEL"); fi

targets=$(git grep -lE '^func Fuzz[A-Za-z0-9_]*\(' -- '*_test.go' |
	while read -r f; do
		sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' "$f" | while read -r n; do echo "./$(dirname "$f") $n"; done
	done)
if [ -n "${FUZZ_ONLY:-}" ]; then
	targets=$(grep -E -- "$FUZZ_ONLY" <<<"$targets" || true)
fi
if [ -z "$targets" ]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
summary=""
fail=0
while read -r pkg name; do
	echo "== $pkg $name, $time"
	if "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" -fuzzminimizetime "$minimize" "${parallel[@]}" "$pkg" 2>&1 | tee "$log"; then
		outcome=ok
	else
		outcome=FAIL
		fail=1
	fi
	last=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -1)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	found=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
	summary+=$(printf '%-22s %-16s %10s %6s  %s' "$pkg" "$name" "${execs:-?}" "${found:-?}" "$outcome")$'\n'
done <<<"$targets"

printf '\n%-22s %-16s %10s %6s  %s\n' package target execs new outcome
printf '%s' "$summary"
exit $fail
