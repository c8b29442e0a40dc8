#!/bin/bash
# Run Go test binaries built by `go test -c`, one package after another,
# each in its package's folder as `go test` would. make integration runs
# this in the User-Mode Linux guest (integration/uml/run.sh).
#
#   integration/uml/gotest.sh [-v] [-run REGEXP] [-timeout DURATION] BINDIR PKG...
#
# PKG is a package folder relative to the repository's root (./ipvs); its
# binary is BINDIR/NAME.test, NAME being the folder with / turned into -
# (./integration/uml: integration-uml.test), as the Makefile names it.
# Prints a line per package in go test's format (ok / FAIL / ?, the import
# path, the time) and exits 1 if any package failed.
set -u

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P) || exit 2
flags=(-test.count=1)
while [ $# -gt 0 ]; do
	case $1 in
	-v) flags+=(-test.v) ;;
	-run) flags+=(-test.run "$2") && shift ;;
	-timeout) flags+=(-test.timeout "$2") && shift ;;
	--) shift && break ;;
	-*)
		echo "gotest.sh: unknown flag $1" >&2
		exit 2
		;;
	*) break ;;
	esac
	shift
done
if [ $# -lt 2 ]; then
	echo "usage: gotest.sh [-v] [-run REGEXP] [-timeout DURATION] BINDIR PKG..." >&2
	exit 2
fi
bindir=$(cd "$1" && pwd -P) || exit 2
shift

module=
while read -r word rest; do
	[ "$word" = module ] && module=$rest && break
done <"$repo/go.mod"

failed=0
for pkg in "$@"; do
	rel=${pkg#./}
	rel=${rel%/}
	name=${rel//\//-}
	path=$module/$rel
	bin=$bindir/$name.test
	if [ ! -x "$bin" ]; then
		printf '?   \t%s\t[no test files]\n' "$path"
		continue
	fi
	if ! cd "$repo/$rel"; then
		printf 'FAIL\t%s\t[no folder %s]\n' "$path" "$repo/$rel"
		failed=1
		continue
	fi
	start=$EPOCHREALTIME
	"$bin" "${flags[@]}"
	rc=$?
	secs=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.3f", e - s }')
	if [ "$rc" = 0 ]; then
		printf 'ok  \t%s\t%ss\n' "$path" "$secs"
	else
		printf 'FAIL\t%s\t%ss (exit status %s)\n' "$path" "$secs" "$rc"
		failed=1
	fi
done
exit "$failed"
