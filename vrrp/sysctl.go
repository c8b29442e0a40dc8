package vrrp

import (
	"slices"
	"strings"

	"github.com/directord/directord/config"
)

// The Node's sysctls, as decisions without files: which interfaces it
// sets promote_secondaries on, and which saved values a reload hands
// from the old Node to the new (node_linux.go sets and restores them).

// promoteDevices are the interfaces, each once, in configuration order,
// whose promote_secondaries the Node sets. Removing a subnet's primary
// address removes its secondaries too, unless the interface promotes
// them: a VIP leaving must not take an operator's address (or another
// instance's VIP) with it. keepalived sets it on the interface of an
// instance with promote_secondaries; directord also on every interface
// that takes IPv4 VIPs, but a macvlan of use_vmac or use_vmac_addr,
// whose sysctls go with the link (vmacSysctls).
func promoteDevices(insts []*config.Instance) []string {
	var devs []string
	add := func(dev string) {
		if !slices.Contains(devs, dev) {
			devs = append(devs, dev)
		}
	}
	for _, ci := range insts {
		if ci.PromoteSecondaries && ci.Interface != "" {
			add(ci.Interface)
		}
		for _, a := range instanceAddrs(ci) {
			if (ci.VMAC != nil && a.Dev == ci.VMAC.Name) || a.VIP.VMACDev != "" {
				continue
			}
			if a.VIP.Prefix.Addr().Is4() && a.Dev != "" {
				add(a.Dev)
			}
		}
	}
	return devs
}

// promotePath is dev's promote_secondaries sysctl.
func promotePath(dev string) string { return "/proc/sys/net/ipv4/conf/" + dev + "/promote_secondaries" }

// sysctlsToTake are the paths whose saved values a new Node takes from
// the old at a reload: those it sets itself (mine), and with rpCleared
// (its clearRPFilter found all.rp_filter already 0, cleared by the old
// Node) every rp_filter the old one changed (saved), whose original
// values are now the new Node's to restore. The old Node leaves them.
func sysctlsToTake(mine, saved []string, rpCleared bool) []string {
	paths := slices.Clone(mine)
	if rpCleared {
		for _, p := range saved {
			if strings.HasSuffix(p, "/rp_filter") && !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	var take []string
	for _, p := range paths {
		if slices.Contains(saved, p) {
			take = append(take, p)
		}
	}
	return take
}
