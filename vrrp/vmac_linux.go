package vrrp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
)

// vmacLink is a macvlan a Node runs a use_vmac instance on.
type vmacLink struct {
	name, base string
	baseIndex  int // the interface it was made on (forgetBaseSysctls)
	// index is the macvlan's own, to know it renamed (vmacRenamed); 0
	// while it is missing.
	index int
	// heldBy is the link that holds its MAC on its interface while it is
	// missing (renamed away, still up): the kernel lets one macvlan of an
	// interface up with a MAC. It is made again when that link lets the
	// MAC go (remakeVMACs).
	heldBy int
	// fwIndex is the macvlan's index in the firewall's tables
	// (VMACFirewall), fw the families it is in there (0: table ip, 1:
	// table ip6); fwIndex 0 for none.
	fwIndex int
	fw      [2]bool
	// created: this Node made it. A Node that never ran (a reload refused
	// after NewNode) removes only those; a Node that ran removes every
	// vmacLink it still holds (Adopt hands those a reload keeps over).
	created bool
}

// vmac makes (or takes, when one is there already) the macvlan of a
// use_vmac instance as keepalived 2.2.7's netlink_link_add_vmac does: a
// private-mode macvlan of the instance's interface with the VRRP virtual
// MAC, no automatic IPv6 link-local address (RFC 5798 section 7.4), IPv6
// disabled on it unless the instance has IPv6 addresses, and up. For
// IPv4 the sysctls that make the kernel answer ARP for the addresses from
// the macvlan only (vmacSysctls); for IPv6 adverts sent on it, the link's
// link-local source is added to it. A macvlan of that name on another
// interface, or with another MAC or mode, is replaced, as keepalived
// replaces it; an interface of that name that is not a macvlan is an
// error (keepalived then falls back to a name of its own).
func (n *Node) vmac(ci *config.Instance) error {
	v := ci.VMAC
	ipv6 := ci.Family == config.Inet6
	v6 := ipv6
	for _, x := range ci.ExcludedVIPs {
		v6 = v6 || x.Prefix.Addr().Is6()
	}
	ip, ip6 := ci.VMACTables(n.globalDefs())
	base, l, err := n.macvlan(ci.Name, v.Name, ci.Interface, v.MAC, ipv6, v6, [2]bool{ip, ip6})
	if err != nil {
		return err
	}
	if ipv6 {
		return n.vmacLinkLocal(ci, base, l)
	}
	return nil
}

// addrVMACs makes the macvlans of an instance's addresses on other
// interfaces (use_vmac_addr, an address's use_vmac) as keepalived makes
// them: each as the instance's own macvlan of that family, without the
// link-local source of adverts (none leave on it). With
// dynamic_interfaces one whose interface does not exist yet is made when
// it is created (remakeVMACs).
func (n *Node) addrVMACs(ci *config.Instance, dynamic bool) error {
	for _, av := range ci.AddrVMACs {
		if dynamic && !n.linkExists(av.Base) {
			n.log.Warn("vrrp: interface does not exist yet: its macvlan is made when it is created (dynamic_interfaces)",
				"instance", ci.Name, "interface", av.Base, "macvlan", av.Name)
			continue
		}
		if err := n.addrVMAC(ci.Name, av); err != nil {
			return err
		}
	}
	return nil
}

// addrVMAC makes (or takes) the macvlan of an address (addrVMACs).
func (n *Node) addrVMAC(inst string, av *config.AddrVMAC) error {
	ip, ip6 := av.Tables(n.globalDefs())
	_, _, err := n.macvlan(inst, av.Name, av.Base, av.MAC, av.IPv6, av.IPv6, [2]bool{ip, ip6})
	return err
}

// globalDefs is the configuration's global_defs (a zero one for a Node
// built without).
func (n *Node) globalDefs() *config.Global {
	if n.global == nil {
		return &config.Global{}
	}
	return n.global
}

// macvlan makes (or takes) the private macvlan name on the interface
// base with mac, set up for addresses of that family (ipv6) and with IPv6
// on it only if v6, in the firewall's tables of the families in tables
// (fwVMAC), and up; it returns the base and the macvlan.
func (n *Node) macvlan(inst, name, baseName, macStr string, ipv6, v6 bool, tables [2]bool) (netlink.Link, netlink.Link, error) {
	h := n.h
	base, err := h.LinkByName(baseName)
	if err != nil {
		return nil, nil, fmt.Errorf("instance %s: use_vmac: interface %s: %w", inst, baseName, err)
	}
	mac, err := net.ParseMAC(macStr)
	if err != nil {
		return nil, nil, fmt.Errorf("instance %s: use_vmac: %w", inst, err)
	}
	if !ipv6 {
		// Before the macvlan exists, so that it is made with the raised
		// default and is set to 0 itself afterwards.
		n.clearRPFilter()
	}
	l, err := h.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		l = nil
	case err != nil:
		return nil, nil, fmt.Errorf("instance %s: use_vmac %s: %w", inst, name, err)
	default:
		mv, ok := l.(*netlink.Macvlan)
		if !ok {
			return nil, nil, fmt.Errorf("instance %s: use_vmac: interface %s exists and is not a macvlan (it is a %s)", inst, name, l.Type())
		}
		if mv.ParentIndex != base.Attrs().Index || mv.Mode != netlink.MACVLAN_MODE_PRIVATE || !bytes.Equal(mv.HardwareAddr, mac) {
			n.log.Info("vrrp: replacing a macvlan of another interface, MAC or mode", "instance", inst, "interface", name)
			if err := h.LinkDel(l); err != nil {
				return nil, nil, fmt.Errorf("instance %s: use_vmac: remove old %s: %w", inst, name, err)
			}
			l = nil
		}
	}
	created := false
	if l == nil {
		mv := &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: name, ParentIndex: base.Attrs().Index, HardwareAddr: mac},
			Mode: netlink.MACVLAN_MODE_PRIVATE}
		if err := h.LinkAdd(mv); err != nil {
			return nil, nil, fmt.Errorf("instance %s: use_vmac: create macvlan %s on %s with %s: %w", inst, name, baseName, macStr, err)
		}
		created = true
		if l, err = h.LinkByName(name); err != nil {
			return nil, nil, fmt.Errorf("instance %s: use_vmac %s: %w", inst, name, err)
		}
	}
	n.vmacMu.Lock()
	known := false
	for _, v := range n.vmacs {
		if v.name == name {
			known, v.created = true, v.created || created
			v.index, v.heldBy = l.Attrs().Index, 0
		}
	}
	if !known {
		n.vmacs = append(n.vmacs, &vmacLink{name: name, base: baseName, baseIndex: base.Attrs().Index, created: created,
			index: l.Attrs().Index})
	}
	n.vmacMu.Unlock()
	if created {
		n.log.Info("vrrp: macvlan created", "instance", inst, "interface", name, "base", baseName, "mac", macStr)
	}
	if !ipv6 {
		if err := n.vmacSysctls(name, baseName); err != nil {
			return nil, nil, fmt.Errorf("instance %s: use_vmac %s: %w", inst, name, err)
		}
	}
	// No link-local address made from the VMAC: the address generation
	// mode first (it cannot go with the link's creation), then IPv6 off
	// for an IPv4 macvlan without IPv6 addresses, as keepalived does.
	if err := h.LinkSetIP6AddrGenMode(l, 1 /* IN6_ADDR_GEN_MODE_NONE */); err != nil {
		n.log.Warn("vrrp: setting no IPv6 address generation on the macvlan", "instance", inst, "interface", name, "err", err)
	}
	disable := "0"
	if !v6 {
		disable = "1"
	}
	if err := writeSysctl("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", disable); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("instance %s: use_vmac %s: %w", inst, name, err)
	}
	// No router solicitation from the VMAC when the link comes up: a
	// switch would learn the VMAC at a backup's port (keepalived drops
	// them with an nftables rule, setup_rule_drop_router_solicit).
	if err := writeSysctl("/proc/sys/net/ipv6/conf/"+name+"/router_solicitations", "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("instance %s: use_vmac %s: %w", inst, name, err)
	}
	// Before it comes up and reports its groups.
	n.fwVMAC(name, l.Attrs().Index, base.Attrs().Index, tables)
	if err := h.LinkSetUp(l); err != nil {
		return nil, nil, fmt.Errorf("instance %s: use_vmac: set %s up: %w", inst, name, err)
	}
	return base, l, nil
}

// vmacLinkLocal gives an IPv6 instance's macvlan the source of its adverts,
// as keepalived's set_link_local_address does: the configured source,
// else the interface's link-local address, else one made from the
// interface's MAC (EUI-64). The kernel sends from a link-local address only
// on a link that holds it. With vmac_xmit_base the adverts leave on the
// interface: the macvlan holds none (one left from before is removed).
func (n *Node) vmacLinkLocal(ci *config.Instance, base, l netlink.Link) error {
	h := n.h
	addrs, err := h.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		return fmt.Errorf("instance %s: use_vmac %s: %w", ci.Name, l.Attrs().Name, err)
	}
	if ci.VMAC.XmitBase {
		for _, a := range addrs {
			if a.IP.IsLinkLocalUnicast() {
				if err := h.AddrDel(l, &a); err != nil {
					n.log.Warn("vrrp: removing the macvlan's link-local address (vmac_xmit_base)", "instance", ci.Name, "err", err)
				}
			}
		}
		return nil
	}
	var src netip.Addr
	switch {
	case ci.UnicastSrcIP.Is6():
		src = ci.UnicastSrcIP
	case ci.MCastSrcIP.Is6():
		src = ci.MCastSrcIP
	default:
		if ifi, err := net.InterfaceByName(ci.Interface); err == nil {
			src, _ = PrimaryAddr(ifi, true)
		}
	}
	if !src.IsValid() {
		src = eui64LinkLocal(base.Attrs().HardwareAddr)
	}
	for _, a := range addrs {
		if b, ok := netip.AddrFromSlice(a.IP); ok && b == src.WithZone("") {
			return nil
		}
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: src.WithZone("").AsSlice(), Mask: net.CIDRMask(64, 128)}, Flags: syscall.IFA_F_NODAD}
	if err := h.AddrAdd(l, a); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("instance %s: use_vmac: add link-local %s to %s: %w", ci.Name, src, l.Attrs().Name, err)
	}
	return nil
}

// eui64LinkLocal is keepalived's make_link_local_address: fe80::/64 with
// the modified EUI-64 of a 6-byte MAC.
func eui64LinkLocal(mac net.HardwareAddr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	if len(mac) == 6 {
		b[8], b[9], b[10], b[11], b[12] = mac[0]^2, mac[1], mac[2], 0xff, 0xfe
		b[13], b[14], b[15] = mac[3], mac[4], mac[5]
	}
	return netip.AddrFrom16(b)
}

// vmacSysctls sets what keepalived's set_interface_parameters sets for an
// IPv4 macvlan: on it, arp_ignore 1 (ARP is answered only for its own
// addresses, so the VIPs are answered with the VMAC), accept_local 1 and
// rp_filter 0 (its traffic comes back through the parent), and
// promote_secondaries 1; on the parent, arp_ignore 1 and arp_filter 1 (it
// does not answer for the macvlan's addresses), restored when the Node
// ends (a reload hands the saved values over).
func (n *Node) vmacSysctls(name, base string) error {
	for _, s := range [][2]string{{"arp_ignore", "1"}, {"accept_local", "1"}, {"rp_filter", "0"}, {"promote_secondaries", "1"}} {
		if err := writeSysctl("/proc/sys/net/ipv4/conf/"+name+"/"+s[0], s[1]); err != nil {
			return err
		}
	}
	n.setSysctl("/proc/sys/net/ipv4/conf/"+base+"/arp_ignore", "1")
	n.setSysctl("/proc/sys/net/ipv4/conf/"+base+"/arp_filter", "1")
	return nil
}

// clearRPFilter is keepalived's clear_rp_filter, once per Node: a macvlan's
// rp_filter 0 counts only with net.ipv4.conf.all.rp_filter 0 (the kernel
// takes the larger), so when all is above 0, default and every interface
// below it are raised to it, keeping each one's filtering as it was, and
// all goes to 0. Everything is restored when the Node ends.
func (n *Node) clearRPFilter() {
	if n.rpCleared {
		return
	}
	n.rpCleared = true
	const dir = "/proc/sys/net/ipv4/conf/"
	all, err := readSysctl(dir + "all/rp_filter")
	if err != nil {
		n.log.Warn("vrrp: reading net.ipv4.conf.all.rp_filter", "err", err)
		return
	}
	if all == "0" {
		return
	}
	names := []string{"default"}
	if ifs, err := net.Interfaces(); err == nil {
		for _, ifi := range ifs {
			names = append(names, ifi.Name)
		}
	}
	for _, name := range names {
		if v, err := readSysctl(dir + name + "/rp_filter"); err == nil && v < all {
			n.setSysctl(dir+name+"/rp_filter", all)
		}
	}
	n.log.Info("vrrp: net.ipv4.conf.all.rp_filter set to 0 for the macvlans, each interface keeping its own", "was", all)
	n.setSysctl(dir+"all/rp_filter", "0")
}

// removeVMACs removes the macvlans the Node holds (all), or only those it
// created (a Node that never ran).
func (n *Node) removeVMACs(all bool) error {
	n.vmacMu.Lock()
	defer n.vmacMu.Unlock()
	var errs []error
	for _, v := range n.vmacs {
		if !all && !v.created {
			continue
		}
		// Its element goes from the firewall's table whatever became of
		// the link: one already gone (deleted under directord) or not a
		// macvlan any more must not leave its index in vmac_map.
		n.unfwVMAC(v)
		l, err := n.h.LinkByName(v.name)
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			continue
		}
		if err == nil {
			if _, ok := l.(*netlink.Macvlan); !ok {
				continue // not ours any more
			}
			err = n.h.LinkDel(l)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("vrrp: remove macvlan %s: %w", v.name, err))
			continue
		}
		n.log.Info("vrrp: macvlan removed", "interface", v.name, "base", v.base)
	}
	n.vmacs = nil
	return errors.Join(errs...)
}

// unfwVMAC takes the macvlan's elements out of the firewall's tables,
// if it has some; under vmacMu.
func (n *Node) unfwVMAC(v *vmacLink) {
	fw, ok := n.fw.(VMACFirewall)
	if !ok || v.fwIndex == 0 {
		return
	}
	for fam, in := range v.fw {
		if !in {
			continue
		}
		var err error
		n.inNS(func() { err = fw.VMAC(v.fwIndex, v.baseIndex, fam == 1, false) })
		if err != nil {
			n.log.Warn("vrrp firewall", "interface", v.name, "err", err)
		}
	}
	v.fwIndex, v.fw = 0, [2]bool{}
}

// takeVMACs hands the macvlans n uses too from old to n: old leaves them
// when it stops.
func (n *Node) takeVMACs(old *Node) {
	old.vmacMu.Lock()
	defer old.vmacMu.Unlock()
	n.vmacMu.Lock()
	defer n.vmacMu.Unlock()
	kept := old.vmacs[:0]
	for _, ov := range old.vmacs {
		var mine *vmacLink
		for _, v := range n.vmacs {
			if v.name == ov.name {
				mine = v
			}
		}
		if mine == nil {
			kept = append(kept, ov)
			continue
		}
		// An element n does not keep (another index, or a family no
		// longer wanted: disable_local_igmp added by the reload) goes.
		if ov.fwIndex != 0 {
			for fam, in := range ov.fw {
				if in && (mine.fwIndex != ov.fwIndex || !mine.fw[fam]) {
					old.unfwFamily(ov, fam)
				}
			}
		}
	}
	old.vmacs = kept
}

// unfwFamily takes the macvlan's element out of one family's table.
func (n *Node) unfwFamily(v *vmacLink, fam int) {
	fw, ok := n.fw.(VMACFirewall)
	if !ok {
		return
	}
	var err error
	n.inNS(func() { err = fw.VMAC(v.fwIndex, v.baseIndex, fam == 1, false) })
	if err != nil {
		n.log.Warn("vrrp firewall", "interface", v.name, "err", err)
	}
	v.fw[fam] = false
}

func readSysctl(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(bytes.TrimSpace(b)), err
}

func writeSysctl(path, v string) error {
	return os.WriteFile(path, []byte(v), 0)
}

// isAddrVMAC says whether dev is one of the instance's macvlans for its
// addresses on other interfaces (use_vmac_addr, an address's use_vmac).
func isAddrVMAC(ci *config.Instance, dev string) bool {
	for _, av := range ci.AddrVMACs {
		if av.Name == dev {
			return true
		}
	}
	return false
}

// VMACFirewall is a Firewall that also keeps macvlans, by index with
// their interface's, in the table of a family (v6), so that their IGMP
// (IPv4) or MLD (IPv6) reports leave from the interface, as keepalived's
// nft_add_vmac (internal/nft's Table).
type VMACFirewall interface {
	VMAC(index, base int, v6, on bool) error
}

// vmacReports names what a family's table keeps from leaving with the
// VMAC, for the log.
var vmacReports = [2]string{"IGMP", "MLD"}

// fwVMAC puts the macvlan name (index, on the interface of index base)
// in the firewall's tables of the families in tables (0: table ip, 1:
// table ip6), in place of an earlier index of the name, and takes it out
// of a family's table it is no longer wanted in.
func (n *Node) fwVMAC(name string, index, base int, tables [2]bool) {
	fw, ok := n.fw.(VMACFirewall)
	if !ok {
		return
	}
	n.vmacMu.Lock()
	defer n.vmacMu.Unlock()
	for _, v := range n.vmacs {
		if v.name != name || v.fwIndex == index && v.fw == tables {
			continue
		}
		for fam, in := range v.fw {
			if !in || v.fwIndex == index && tables[fam] {
				continue
			}
			if err := fw.VMAC(v.fwIndex, base, fam == 1, false); err != nil {
				n.log.Warn("vrrp firewall: removing a macvlan made again", "interface", name, "err", err)
			}
			v.fw[fam] = false
		}
		for fam, want := range tables {
			if !want || v.fw[fam] {
				continue
			}
			if err := fw.VMAC(index, base, fam == 1, true); err != nil {
				n.log.Error("vrrp firewall: its "+vmacReports[fam]+" reports leave with the VMAC", "interface", name, "err", err)
				continue
			}
			v.fw[fam] = true
		}
		v.fwIndex = 0
		if v.fw[0] || v.fw[1] {
			v.fwIndex = index
		}
	}
}
