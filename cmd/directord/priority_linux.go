package main

import (
	"os"
	"strconv"
	"syscall"
)

// vrrpNice is the nice value directord gives itself: adverts must leave on
// time even when the host is busy, or a backup takes the VIP for a master
// that is only slow. keepalived offers vrrp_priority for this; directord
// does it by default and leaves the systemd unit's Nice= to override.
const vrrpNice = -15

// raisePriority renices every thread of the process (nice is per thread on
// Linux, and new threads inherit their creator's). It fails quietly
// without CAP_SYS_NICE.
func raisePriority() error {
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
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, vrrpNice); err != nil && first == nil {
			first = err
		}
	}
	return first
}
