package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where ip netns keeps the namespaces it names (keepalived
// 2.2.7 opens RUNSTATEDIR/netns/NAME, /run/netns on Debian).
const netnsDir = "/run/netns"

// envNetNS is set, to the namespace's name, in the environment of the
// directord that enterNetNamespace executes: a second exec for the same
// name would mean setns did not hold, and must not loop.
const envNetNS = "DIRECTORD_NET_NAMESPACE"

// netnsPath is the file of the namespace name.
func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// inNetNamespace reports whether this process's thread already runs in
// the namespace at path: the same nsfs inode as /proc/thread-self/ns/net.
func inNetNamespace(path string) (bool, error) {
	var want, have unix.Stat_t
	if err := unix.Stat(path, &want); err != nil {
		return false, err
	}
	if err := unix.Stat("/proc/thread-self/ns/net", &have); err != nil {
		return false, err
	}
	return want.Dev == have.Dev && want.Ino == have.Ino, nil
}

// enterNetNamespace makes the whole daemon run in the named namespace
// (net_namespace), as keepalived does by calling setns before it starts
// anything. A Go process cannot do that: setns moves only the calling
// thread, and the runtime already has other threads, which goroutines,
// the guardian and scripts would run on or be forked from. So the daemon
// moves its main thread (locked since init) into the namespace and
// executes its own binary again from that thread: the new image starts with that single
// thread, in the namespace, and every thread and process it makes is
// there too. The process ID stays (the pid file, systemd's MAINPID and
// its notifications), so do the arguments, the environment and the open
// files. It returns nil when the process is already in the namespace, and
// else only on failure: the caller stops.
//
// The alternative, a C constructor run before the Go runtime starts (as
// runc's nsenter), needs cgo and the namespace's name before the
// configuration is read; the re-exec needs neither.
func enterNetNamespace(name, at string) error {
	path := netnsPath(name)
	in, err := inNetNamespace(path)
	if err != nil {
		return netnsError(name, at, err)
	}
	if in {
		return nil
	}
	if os.Getenv(envNetNS) == name {
		return fmt.Errorf("%s: net_namespace %s: still not in %s after entering it", at, name, path)
	}
	// The main thread, locked to the main goroutine since init: on
	// failure it may be in the other namespace, and the caller stops.
	if unix.Gettid() != unix.Getpid() {
		return fmt.Errorf("%s: net_namespace %s: not on the main thread", at, name)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return netnsError(name, at, err)
	}
	err = unix.Setns(fd, unix.CLONE_NEWNET)
	unix.Close(fd)
	if err != nil {
		return netnsError(name, at, err)
	}
	env := append(os.Environ(), envNetNS+"="+name)
	// By its path, so that the process keeps its name (ps, pidof): an
	// exec of /proc/self/exe names it "exe". The running binary, if
	// replaced since it started, through /proc/self/exe.
	self, err := os.Executable()
	if err != nil || strings.HasSuffix(self, " (deleted)") {
		self = "/proc/self/exe"
	}
	err = unix.Exec(self, os.Args, env)
	return fmt.Errorf("%s: net_namespace %s: execute directord again inside it: %w", at, name, err)
}

// netnsError says why a namespace cannot be entered, and what to do.
func netnsError(name, at string, err error) error {
	hint := ""
	switch {
	case errors.Is(err, unix.ENOENT):
		hint = " (create it first: ip netns add " + name + "; keepalived stops too)"
	case errors.Is(err, unix.EPERM):
		hint = " (entering a network namespace needs CAP_SYS_ADMIN: add it to the unit's CapabilityBoundingSet, docs/install.md)"
	}
	return fmt.Errorf("%s: net_namespace %s: cannot enter %s: %w%s", at, name, netnsPath(name), err, hint)
}

// ipvsNetNS opens the namespace of net_namespace_ipvs for the IPVS
// socket: /run/netns/NAME, or for an empty name the host's own
// namespace, PID 1's, as keepalived 2.2.7. The caller closes the file.
func ipvsNetNS(name string) (*os.File, error) {
	path := "/proc/1/ns/net"
	if name != "" {
		path = netnsPath(name)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("net_namespace_ipvs: %w", err)
	}
	return f, nil
}
