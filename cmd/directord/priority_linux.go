package main

import (
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// renice sets every thread of the process to nice (nice is per thread on
// Linux, and new threads inherit their creator's): global_defs
// vrrp_priority, -15 unless set.
func renice(nice int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// setRealtime puts every thread of the process in SCHED_RR at prio
// (global_defs vrrp_rt_priority). The kernel's real-time throttling
// (sched_rt_runtime_us) still leaves other tasks their share.
func setRealtime(prio int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	type schedParam struct{ priority int32 }
	p := schedParam{int32(prio)}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), 2 /* SCHED_RR */, uintptr(unsafe.Pointer(&p))); e != 0 && first == nil {
			first = e
		}
	}
	return first
}
