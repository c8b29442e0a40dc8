#!/bin/bash
# PID 1 of the User-Mode Linux guest that integration/uml/run.sh boots.
#
# The guest's root is the host's whole file system (hostfs), so everything
# installed on the host is here. This script keeps the guest from writing
# to the host outside the run's scratch folder: /run, /tmp, /var/tmp,
# /dev/shm and HOME are tmpfs in the guest's own memory.
#
# run.sh passes the scratch folder on the kernel command line as
# uml_host_dir=DIR (the kernel hands unknown NAME=VALUE parameters to init
# as environment variables). In DIR, run.sh leaves:
#   argv      the command, one NUL-terminated argument after another
#   cwd       the folder to run it in
#   timeout   its time limit in seconds
#   env       extra NAME=VALUE entries for its environment, NUL-terminated
#   hosttime  the host's clock (seconds since the epoch) just before boot
#   overlays  NAME=DIR entries, NUL-terminated: mount an overlay on the
#             host's DIR whose writes stay in the guest, and set NAME=DIR
#             (Go's build and module caches)
#   modroot/  lib/modules/VERSION, a symlink to /usr/lib/uml/modules/VERSION
#   modprobe  modprobe -d DIR/modroot, for the kernel's module requests
# and this script writes back:
#   status    the command's exit status (written last)
#   timedout  present when the command was killed at its time limit
# Whatever happens, the script ends by powering the guest off.
#
# Starting a program costs the guest 60-250 ms, so this script uses bash's
# builtins where it can: boot to the command takes about 3 s.

export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
umask 022

say() { echo "guest-init: $*"; }

# poweroff_now powers the guest off at once; it never returns.
# shellcheck disable=SC2317 # called by the trap
poweroff_now() {
	sync
	# systemctl's poweroff with -ff calls reboot(2) without asking anyone.
	poweroff -ff >/dev/null 2>&1
	echo o >/proc/sysrq-trigger 2>/dev/null
	sleep 5
	say "could not power off; run.sh's timeout will stop the guest"
	while :; do sleep 3600; done
}
trap poweroff_now EXIT

fail() {
	say "$*"
	exit 1 # the EXIT trap powers off; run.sh finds no status file
}

[ "$$" = 1 ] || fail "must run as PID 1 of a User-Mode Linux guest (see integration/uml/run.sh)"
[ -n "${uml_host_dir:-}" ] || fail "no uml_host_dir= on the kernel command line"
host_dir_on_host=$uml_host_dir
unset uml_host_dir

# The console turns \n into \r\n; logs read better without the \r.
stty -onlcr 2>/dev/null

# --- file systems -----------------------------------------------------------
# Until then /proc is the host's, seen through hostfs.
mount -t proc proc /proc || fail "cannot mount /proc"
mounted() {
	local dir _
	while read -r _ dir _; do
		[ "$dir" = "$1" ] && return 0
	done </proc/self/mounts
	return 1
}
mounted /sys || mount -t sysfs sysfs /sys || fail "cannot mount /sys"
# The kernel mounts devtmpfs itself when built with DEVTMPFS_MOUNT; without
# it /dev would be the host's /dev seen through hostfs.
mounted /dev || mount -t devtmpfs devtmpfs /dev || fail "cannot mount devtmpfs on /dev"
mkdir -p /dev/pts /dev/shm /dev/.uml-host
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd

# The scratch folder may sit under /tmp or /run, which the tmpfs mounts
# below hide: hold it on a mount point in the guest's /dev meanwhile.
mount --bind "$host_dir_on_host" /dev/.uml-host || fail "cannot bind-mount the scratch folder $host_dir_on_host"
# So may the repository (a CI checkout in /tmp): it is held the same way
# and put back at its own path on the new tmpfs.
repo=
[ -f "$host_dir_on_host/repo" ] && repo=$(<"$host_dir_on_host/repo")
case $repo in
/tmp/* | /run/* | /var/tmp/*)
	mkdir -p /dev/.uml-repo &&
		mount --bind "$repo" /dev/.uml-repo || fail "cannot bind-mount the repository $repo"
	;;
*) repo= ;;
esac
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run || fail "cannot mount tmpfs on /run"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp || fail "cannot mount tmpfs on /tmp"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp || fail "cannot mount tmpfs on /var/tmp"
mkdir -p /run/uml/host /run/lock /tmp/home
mount --move /dev/.uml-host /run/uml/host || fail "cannot move the scratch folder's mount"
if [ -n "$repo" ]; then
	mkdir -p "$repo" && mount --move /dev/.uml-repo "$repo" || fail "cannot put the repository back at $repo"
fi
H=/run/uml/host

echo directord-uml >/proc/sys/kernel/hostname

# --- modules ----------------------------------------------------------------
# Debian's user-mode-linux keeps its modules in /usr/lib/uml/modules/VER;
# modprobe looks in DIR/lib/modules/$(uname -r): run.sh made such a DIR.
read -r kver </proc/sys/kernel/osrelease
moddir=$H/modroot
[ -e "$moddir/lib/modules/$kver/modules.dep" ] ||
	say "no modules for kernel $kver in /usr/lib/uml/modules"
# The kernel's own requests (a new link type, a protocol family) go
# through run.sh's wrapper too.
echo "$H/modprobe" >/proc/sys/kernel/modprobe

# ip_vs brings in nf_conntrack, nf_defrag_ipv4/6 and ipv6. One modprobe
# for all of them.
wanted="ip_vs veth bridge overlay"
for s in rr wrr lc wlc lblc lblcr dh sh sed nq fo ovf mh twos; do
	wanted="$wanted ip_vs_$s"
done
# shellcheck disable=SC2086 # a list of names
modprobe -a -q -d "$moddir" $wanted
for m in $wanted; do
	[ -d "/sys/module/$m" ] && continue
	case $m in
	ip_vs_twos) ;; # since Linux 6.2
	*) say "could not load module $m" ;;
	esac
done

ip link set lo up || say "cannot bring lo up"

# --- the command ------------------------------------------------------------
[ -s "$H/argv" ] || fail "no command in $host_dir_on_host/argv"
mapfile -d '' -t argv <"$H/argv"
cwd=/
[ -f "$H/cwd" ] && cwd=$(<"$H/cwd")
limit=600
[ -f "$H/timeout" ] && limit=$(<"$H/timeout")

cmdenv=(
	PATH="$PATH"
	HOME=/tmp/home
	USER=root
	LOGNAME=root
	TMPDIR=/tmp
	TERM="${TERM:-linux}"
	LANG=C.UTF-8
	DIRECTORD_REQUIRE_IPVS=1
	DIRECTORD_UML=1
)
if [ -s "$H/overlays" ]; then
	mapfile -d '' -t overlays <"$H/overlays"
	n=0
	for kv in "${overlays[@]}"; do
		d=${kv#*=}
		o=/tmp/.overlay/$n
		n=$((n + 1))
		if mkdir -p "$o/upper" "$o/work" &&
			mount -t overlay overlay -o "lowerdir=$d,upperdir=$o/upper,workdir=$o/work" "$d"; then
			cmdenv+=("$kv")
		else
			say "no overlay on $d: ${kv%%=*} left at its default"
		fi
	done
fi
if [ -f "$H/env" ]; then
	mapfile -d '' -t extra <"$H/env"
	cmdenv+=("${extra[@]}")
fi

if [ -f "$H/hosttime" ]; then
	skew=$((EPOCHSECONDS - $(<"$H/hosttime")))
	if [ "$skew" -lt -2 ] || [ "$skew" -gt 60 ]; then
		say "warning: the guest's clock is ${skew}s off the host's"
	fi
fi

read -r up_start _ </proc/uptime
start=$EPOCHSECONDS
# timeout(1) runs the command in a process group of its own and signals
# the group; KILL follows TERM after 10 s.
(cd "$cwd" && exec env -i "${cmdenv[@]}" timeout -k 10 "$limit" "${argv[@]}") </dev/null
rc=$?
if { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ $((EPOCHSECONDS - start)) -ge "$limit" ]; then
	say "the command ran out of its ${limit}s and was killed"
	: >"$H/timedout"
fi
if [ "$rc" != 0 ]; then
	# What the kernel said while the command ran, errors and warnings.
	dmesg --level=emerg,alert,crit,err,warn 2>/dev/null |
		awk -v t="$up_start" -F'[][]' '$2 + 0 >= t + 0 { n++; if (n <= 50) { if (n == 1) print "guest-init: kernel messages while the command ran:"; print } }'
fi

echo "$rc" >"$H/status"
exit 0 # the EXIT trap syncs and powers off
