package director

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// NamespaceSysctls are the net.ipv4.vs settings of the network namespace
// of the open file fd (net_namespace_ipvs's), which need not be
// directord's: /proc/sys/net shows the namespace of the thread that
// opens it, so each access is made from a thread moved into it.
func NamespaceSysctls(fd int) Sysctls { return nsSysctls{fd} }

type nsSysctls struct{ fd int }

func (s nsSysctls) Sysctl(name string) (v string, err error) {
	err = s.in(func() (err error) { v, err = (procSysctls{}).Sysctl(name); return })
	return v, err
}

func (s nsSysctls) SetSysctl(name, value string) error {
	return s.in(func() error { return (procSysctls{}).SetSysctl(name, value) })
}

// in runs f on a thread of its own inside the namespace. A thread that
// cannot go back to its namespace stays locked, so that the runtime ends
// it with its goroutine instead of giving it to another.
func (s nsSysctls) in(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(s.fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter net_namespace_ipvs's namespace: %w", err)
			return
		}
		err = f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}
