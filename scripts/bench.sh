#!/usr/bin/env bash
# make bench: every benchmark the issues asked for, each beside its
# reference (keepalived, ipvsadm) in the same run. The outputs land in
# bin/bench (one file per step, the guest's whole console included); the
# results table is written into docs/benchmarks.md between its markers
# and printed, the plots into docs/img. Takes about half an hour.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bin/bench}
rm -rf "$out"
mkdir -p "$out"
{
	echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r | cut -d. -f1,2)"
	echo "date: $(date -u +%F)"
} >"$out/machine.txt"

# step NAME CMD...: runs CMD, its whole output into $out/NAME.txt, its
# benchmark lines on the terminal.
step() {
	local name=$1
	shift
	echo "== $name: $*"
	local rc
	set +e
	"$@" 2>&1 | tee "$out/$name.txt" | grep -E '^(Benchmark|--- FAIL|FAIL|panic|ok |PASS$|config|  [a-z])'
	rc=${PIPESTATUS[0]}
	set -e
	if [ "$rc" -ne 0 ]; then
		echo "bench: $name failed; its output: $out/$name.txt" >&2
		exit 1
	fi
}

# soft_step NAME CMD...: step, but a failure is said and the run goes on,
# the step's rows missing from the table. For the lab's benchmarks: each
# round builds a whole lab in the guest, and on a busy machine a lab may
# not come up (a real server not listening within the lab's 30 s), which
# must not cost the run every other figure.
soft_step() {
	if ! (step "$@"); then
		echo "bench: $1 failed, its rows are left out; its output: $out/$1.txt" >&2
	fi
}

# shellcheck disable=SC2046 # one argument per package
step unit go test -run '^$' -bench . -benchmem $(go list ./... | grep -v /integration)
step config scripts/bench-config.sh
step failover go test -run '^$' -bench Failover -benchtime "${FAILOVER_ROUNDS:-5}x" ./integration
step bgp go test -run '^$' -bench FailoverBGP -benchtime "${FAILOVER_ROUNDS:-5}x" ./bgp
step adverts go test -run '^$' -bench AdvertInterval -benchtime 3x ./integration
step ipvs make --no-print-directory bench-ipvs
step lvs make --no-print-directory bench-lvs
soft_step lab make --no-print-directory bench-lab
echo "== results"
go run ./internal/cmd/benchreport -in "$out" -doc docs/benchmarks.md -img docs/img
