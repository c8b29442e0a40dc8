#!/bin/bash
# Run one command as root in a User-Mode Linux guest whose kernel has IPVS,
# and exit with the command's exit status.
#
#   integration/uml/run.sh [-m MEM] [-t TIMEOUT] [-e NAME=VALUE]... [-C DIR] [-v] -- CMD [ARGS...]
#
#   -m MEM      guest memory (default 1536M)
#   -t TIMEOUT  the command's time limit in seconds (default 1800); the
#               guest as a whole gets 60 s more to boot and power off
#   -e N=V      add N=V to the command's environment (repeatable)
#   -C DIR      run the command in DIR (default: the repository's root)
#   -v          show the kernel's boot log on the console, and UML's notes
#
# The guest (Debian's user-mode-linux, /usr/bin/linux.uml) sees the host's
# whole file system through hostfs, so CMD can be any program installed on
# the host. guest-init.sh, its PID 1, loads IPVS and the other modules,
# mounts tmpfs on /run, /tmp and /var/tmp and runs CMD with
# DIRECTORD_REQUIRE_IPVS=1. The guest's console is this script's stdout.
#
# Exit status: CMD's; 124 if it ran out of time; 125 if the guest stopped
# without reporting a status (a kernel panic, a crash) or could not start.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P) || exit 125
repo=$(cd "$here/../.." && pwd -P) || exit 125

mem=1536M
limit=1800
cwd=$repo
verbose=
extra_env=()

usage() {
	sed -n '5,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 125
}
die() {
	echo "run.sh: $*" >&2
	exit 125
}

while getopts "m:t:e:C:vh" opt; do
	case $opt in
	m) mem=$OPTARG ;;
	t) limit=$OPTARG ;;
	e) extra_env+=("$OPTARG") ;;
	C) cwd=$(cd "$OPTARG" && pwd -P) || die "no folder $OPTARG" ;;
	v) verbose=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage

[[ $limit =~ ^[1-9][0-9]*$ ]] || die "-t wants a number of seconds, not '$limit'"
# linux.uml takes mem=NNNM or NNNG; 512M to 8G boot alike. The guest's
# /tmp, where t.TempDir() and Go's overlays write, gets half of it.
if [[ $mem =~ ^([1-9][0-9]*)([MG])$ ]]; then
	mem_mb=${BASH_REMATCH[1]}
	[ "${BASH_REMATCH[2]}" = G ] && mem_mb=$((mem_mb * 1024))
	[ "$mem_mb" -ge 512 ] || die "-m $mem is too small for Go test binaries; use 512M or more"
else
	die "-m wants a size like 1536M or 2G, not '$mem'"
fi
for e in "${extra_env[@]}"; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "-e wants NAME=VALUE, not '$e'"
done

uml=${LINUX_UML:-/usr/bin/linux.uml}
[ -x "$uml" ] || die "no $uml: install Debian's user-mode-linux (make integration does)"
command -v modprobe >/dev/null || die "no modprobe: install Debian's kmod (make integration does)"
kver=$("$uml" --version 2>/dev/null)
[ -d "/usr/lib/uml/modules/$kver" ] || die "no /usr/lib/uml/modules/$kver for $uml (kernel '$kver'): reinstall user-mode-linux"

# The scratch folder: the command and its answer pass through it. Its path
# goes on the kernel command line, so it must not hold spaces.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/directord-uml.XXXXXX" 2>/dev/null)
if [ -z "$scratch" ] || [[ $scratch =~ [[:space:]\"] ]]; then
	[ -n "$scratch" ] && rmdir "$scratch"
	scratch=$(mktemp -d /tmp/directord-uml.XXXXXX) || die "cannot make a scratch folder"
fi

uml_pid=
watchdog_pid=
# UML makes itself the leader of a process group of its own (its pid), and
# its helper processes outlive a KILL sent to that pid alone: stop_guest
# asks the guest to stop, then kills by pid what is left in its group.
group_pids() { ps -eo pid=,pgid=,stat= | awk -v g="$1" '$2 == g && $3 !~ /^Z/ { print $1 }'; }
stop_guest() {
	local pid=$1 left
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
	fi
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		left=$(group_pids "$pid")
		[ -n "$left" ] || break
		# shellcheck disable=SC2086 # a list of pids
		kill -KILL $left 2>/dev/null
		sleep 0.5
	done
	wait "$pid" 2>/dev/null
}
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	if [ -n "$watchdog_pid" ]; then
		kill -TERM "$watchdog_pid" 2>/dev/null
		wait "$watchdog_pid" 2>/dev/null
	fi
	[ -z "$uml_pid" ] || stop_guest "$uml_pid"
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT
trap 'echo "run.sh: terminated" >&2; exit 143' TERM HUP

printf '%s\0' "$@" >"$scratch/argv"
printf '%s' "$cwd" >"$scratch/cwd"
printf '%s' "$repo" >"$scratch/repo"
echo "$limit" >"$scratch/timeout"

# Go in the guest (a TestMain that runs go build): the host's build and
# module caches, seen through overlays whose writes stay in the guest's
# memory, so that go build finds its work done (a cold build in the guest
# takes minutes). No network there, no version control stamps (git could
# rewrite the repository's index).
go_env=(GOTOOLCHAIN=local GOPROXY=off GIT_OPTIONAL_LOCKS=0)
: >"$scratch/overlays"
go_bin=$(command -v go || echo /usr/local/go/bin/go)
if [ -x "$go_bin" ] && mapfile -t go_vals < <("$go_bin" env GOCACHE GOMODCACHE GOFLAGS 2>/dev/null) && [ ${#go_vals[@]} -ge 2 ]; then
	for kv in "GOCACHE=${go_vals[0]}" "GOMODCACHE=${go_vals[1]}"; do
		d=${kv#*=}
		# overlayfs options: no commas, colons or spaces in the path
		[ -d "$d" ] && [[ $d != *[,:[:space:]]* ]] && printf '%s\0' "$kv" >>"$scratch/overlays"
	done
	goflags=${go_vals[2]:-}
	[[ $goflags == *-buildvcs* ]] || goflags="${goflags:+$goflags }-buildvcs=false"
	go_env+=("GOFLAGS=$goflags")
fi
# -e's entries come last: they win.
printf '%s\0' "${go_env[@]}" "${extra_env[@]}" >"$scratch/env"
# modprobe -d DIR looks in DIR/lib/modules/$(uname -r); /run/uml/host is
# where the guest sees the scratch folder.
if ! { cp "$here/guest-init.sh" "$scratch/init" &&
	mkdir -p "$scratch/modroot/lib/modules" &&
	ln -s "/usr/lib/uml/modules/$kver" "$scratch/modroot/lib/modules/$kver" &&
	printf '#!/bin/sh\nexec modprobe -d /run/uml/host/modroot "$@"\n' >"$scratch/modprobe" &&
	chmod 755 "$scratch/init" "$scratch/modprobe"; }; then
	die "cannot write to $scratch"
fi

# UML keeps the guest's memory in a file it makes (and unlinks at once) in
# $TMPDIR; it wants a tmpfs that allows PROT_EXEC. /dev/shm is one on
# Debian; otherwise the scratch folder serves, more slowly.
uml_tmp=$scratch
if [ -d /dev/shm ] && [ -w /dev/shm ] &&
	awk '$2 == "/dev/shm" && $3 == "tmpfs" && $4 !~ /(^|,)noexec(,|$)/ { ok = 1 } END { exit !ok }' /proc/mounts &&
	[ "$(df -Pm /dev/shm | awk 'NR == 2 { print $4 }')" -gt "$mem_mb" ]; then
	uml_tmp=/dev/shm
fi

loglevel=loglevel=3 # the guest's console: the command's output, errors
[ -n "$verbose" ] && loglevel=loglevel=7

date +%s >"$scratch/hosttime"
start=$(date +%s.%N)
# con0: the console writes to our stdout (as fd 3) and reads nothing, so a
# terminal on stdin is left alone; UML's own start-up notes go to uml.log.
# uml_dir: UML's runtime files (default ~/.uml). The cd: UML opens a disk
# file ./root_fs if there is one.
(cd "$scratch" && exec env TMPDIR="$uml_tmp" "$uml" \
	mem="$mem" root=/dev/root rootfstype=hostfs rootflags=/ rw \
	init="$scratch/init" uml_host_dir="$scratch" \
	con=null ssl=null con0=null,fd:3 uml_dir="$scratch" \
	$loglevel) </dev/null 3>&1 >"$scratch/uml.log" 2>&1 &
uml_pid=$!

# UML_HOST_GRACE: for testing this script's own timeout.
host_limit=$((limit + ${UML_HOST_GRACE:-60}))
watchdog() {
	local sp
	trap 'kill "$sp" 2>/dev/null; exit 0' TERM
	sleep "$host_limit" &
	sp=$!
	wait "$sp"
	: >"$scratch/host-timeout"
	kill -TERM "$1" 2>/dev/null # the main shell's wait returns
	sleep 10 &
	sp=$!
	wait "$sp"
	kill -KILL "$1" 2>/dev/null
}
watchdog "$uml_pid" &
watchdog_pid=$!

wait "$uml_pid"
uml_rc=$?
kill -TERM "$watchdog_pid" 2>/dev/null
wait "$watchdog_pid" 2>/dev/null
watchdog_pid=
stop_guest "$uml_pid" # its helpers, if they outlived it
uml_pid=
[ -z "$verbose" ] || cat "$scratch/uml.log" >&2
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

if [ -e "$scratch/host-timeout" ]; then
	echo "run.sh: the guest did not stop within ${host_limit}s; killed it" >&2
	exit 124
fi
if [ ! -s "$scratch/status" ]; then
	if [ -s "$scratch/uml.log" ]; then
		echo "run.sh: linux.uml said:" >&2
		tail -n 20 "$scratch/uml.log" >&2
	fi
	echo "run.sh: the guest stopped (linux.uml exit status $uml_rc) without reporting the command's exit status: a kernel panic or a crash? See the console above; -v shows the kernel's log" >&2
	exit 125
fi
rc=$(cat "$scratch/status")
if [ -e "$scratch/timedout" ]; then
	echo "run.sh: the command ran out of its ${limit}s in the guest" >&2
	exit 124
fi
echo "run.sh: guest done in ${secs}s, command exit status $rc" >&2
exit "$rc"
