#!/usr/bin/env bash
# Parse and validate 1,000 virtual servers x 20 SSL_GET real servers with
# directord -t and keepalived -t on the same file, in the same run, and
# report the medians and their ratio. Needs bin/directord (make build),
# keepalived and GNU time (make deps).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go run ./internal/cmd/genconf -vs 1000 -rs 20 >"$work/large.conf"

# measure CMD...: prints "median_seconds median_maxrss_kb" over $runs runs.
measure() {
	local i
	: >"$work/runs"
	for ((i = 0; i < runs; i++)); do
		/usr/bin/time -f "%e %M" -o "$work/t" "$@" >/dev/null 2>&1 || true
		tail -n 1 "$work/t" >>"$work/runs"
	done
	echo "$(median 1) $(median 2)"
}

# median N: the median of column N of $work/runs.
median() {
	awk -v c="$1" '{ print $c }' "$work/runs" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

read -r d_s d_kb < <(measure bin/directord -t -f "$work/large.conf")
read -r k_s k_kb < <(measure keepalived -t -f "$work/large.conf")
printf '%-44s %12s %12s %8s\n' "config: 1,000 VS x 20 RS (SSL_GET), -t" directord keepalived ratio
printf '%-44s %12s %12s %8s\n' "  wall time, median of $runs (s)" "$d_s" "$k_s" "$(awk -v a="$d_s" -v b="$k_s" 'BEGIN { printf "%.2f", a/b }')"
printf '%-44s %12s %12s %8s\n' "  max RSS, median (MB)" "$((d_kb / 1024))" "$((k_kb / 1024))" "$(awk -v a="$d_kb" -v b="$k_kb" 'BEGIN { printf "%.2f", a/b }')"
# The same figures as benchmark lines, for make bench's table.
printf 'BenchmarkConfigCheck/directord %d %s s %s MB\n' "$runs" "$d_s" "$(awk -v k="$d_kb" 'BEGIN { printf "%.1f", k/1024 }')"
printf 'BenchmarkConfigCheck/keepalived %d %s s %s MB\n' "$runs" "$k_s" "$(awk -v k="$k_kb" 'BEGIN { printf "%.1f", k/1024 }')"
