#!/usr/bin/env bash
# fuzz.sh TIME: runs every fuzz target of the repository (each func FuzzX
# in a _test.go file that git tracks), one after the other since go test
# takes one -fuzz at a time, TIME each in fuzzing mode (go test -fuzz
# -fuzztime TIME). TIME is a duration (60s) or a count of executions
# (20000x); make test's smoke run takes a count, see below. It fails when
# any target fails: an input that panics,
# breaks an assertion (each target asserts that its known-good seeds
# decode, so a target gone blind fails at once) or takes longer than
# internal/fuzztest.Limit. A failing input is saved under the package's
# testdata/fuzz/FuzzX/, as go test does. Ends with a table: per target,
# the executions, the new inputs found and the outcome.
#
# Go 1.26's fuzzing coordinator can fail a duration-bounded run that found
# nothing: when -fuzztime's deadline fires, it may read the expired
# parent context before the workers' child context is cancelled and
# report "context deadline exceeded" as the target's failure, with no
# input saved (go.dev/issue/75804, fixed in Go 1.27; CI saw it on
# FuzzParseAH). A count has no deadline to race, which is why make test
# runs a count. With a duration, a run whose only failure is that line,
# and that saved no input under testdata/fuzz/FuzzX, is the toolchain's
# and not the target's: its outcome reads "ok (go#75804)", and any other
# failure still fails.
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
# saved NAME DIR: the inputs the engine has saved for target NAME in the
# package at DIR, one file name a line.
saved() { ls "$2/testdata/fuzz/$1" 2>/dev/null || true; }

# deadline_only NAME LOG: the run in LOG failed with nothing but the
# coordinator's "context deadline exceeded" for target NAME.
deadline_only() {
	grep -qxE -- "--- FAIL: $1 \([0-9.]+s\)" "$2" &&
		grep -qx '    context deadline exceeded' "$2" &&
		[ "$(grep -cE '^\s*--- FAIL|^panic:|fuzzing process hung|Failing input written' "$2")" = 1 ]
}

while read -r pkg name; do
	echo "== $pkg $name, $time"
	before=$(saved "$name" "$pkg")
	if "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" -fuzzminimizetime "$minimize" "${parallel[@]}" "$pkg" 2>&1 | tee "$log"; then
		outcome=ok
	elif [[ $time != *x ]] && [ "$(saved "$name" "$pkg")" = "$before" ] && deadline_only "$name" "$log"; then
		outcome="ok (go#75804)"
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
