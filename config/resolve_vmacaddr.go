package config

import (
	"net"
	"strings"
)

// AddrVMAC is a macvlan with an instance's virtual MAC on an interface
// other than the instance's own macvlan: for its addresses on another
// interface, or of the other family (use_vmac_addr, an address's
// use_vmac), as keepalived 2.2.7's vrrp_complete_instance makes it.
type AddrVMAC struct {
	Name string `json:"name"`
	Base string `json:"base"`
	// MAC is 00:00:5e:00:01:VRID for IPv4 addresses, 00:00:5e:00:02:VRID
	// for IPv6 ones.
	MAC  string `json:"mac"`
	IPv6 bool   `json:"ipv6,omitempty"`
}

// resolveAddrVMACs gives each address that needs a macvlan of its own
// its VMACDev, as keepalived's vrrp_complete_instance: an address's
// use_vmac applies to an address on another interface or of the other
// family (given with the instance's own use_vmac for one on its macvlan,
// or beside use_vmac_addr, it is reported and changes nothing);
// use_vmac_addr to every such address. The addresses of one VRID, family
// and interface share one macvlan, named by vmac_addr_prefix (else
// vmac_prefix, else "vrrp") as keepalived's create_vmac_name, skipping
// the names taken (the instances' macvlans, the interfaces the file
// names).
func (d *decoder) resolveAddrVMACs(taken map[string]bool) {
	prefix := d.cfg.Global.VMACAddrPrefix
	if prefix == "" {
		prefix = d.cfg.Global.VMACPrefix
	}
	if prefix == "" {
		prefix = "vrrp"
	}
	for _, in := range d.cfg.Instances {
		taken[in.Interface] = true
		for _, v := range append(append([]VIP{}, in.VIPs...), in.ExcludedVIPs...) {
			taken[v.Dev] = true
		}
	}
	// keepalived's if_get_by_vmac: a private macvlan on the same
	// interface with the same MAC serves, an instance's own among them.
	type key struct{ base, mac string }
	made := map[key]*AddrVMAC{}
	for _, in := range d.cfg.Instances {
		if in.VMAC != nil && in.Interface != "" {
			made[key{in.Interface, strings.ToLower(in.VMAC.MAC)}] = &AddrVMAC{Name: in.VMAC.Name}
		}
	}
	for _, in := range d.cfg.Instances {
		for _, list := range []*[]VIP{&in.VIPs, &in.ExcludedVIPs} {
			for i := range *list {
				v := &(*list)[i]
				fam := family(v.Prefix.Addr())
				onOwn := v.Dev == "" || v.Dev == in.Interface
				use := v.UseVMAC
				if use {
					use = false
					switch {
					case onOwn && in.VMAC != nil && fam == in.Family:
						d.rep.lenient(v.Pos, "use_vmac", "%s: use_vmac given for %s and for the instance: it goes on the instance's macvlan, as keepalived does", in.Name, v.Prefix.Addr())
					case (!onOwn || fam != in.Family) && in.VMACAddr:
						d.rep.lenient(v.Pos, "use_vmac", "%s: use_vmac_addr and use_vmac both given for %s: one macvlan, as keepalived makes it", in.Name, v.Prefix.Addr())
					default:
						use = true
					}
				}
				need := false
				switch {
				case onOwn && in.VMAC != nil && fam == in.Family:
					// the instance's own macvlan (AddrDev)
				case onOwn:
					need = use || (in.VMACAddr && fam != in.Family)
				default:
					need = use || in.VMACAddr
				}
				base := v.Dev
				if base == "" {
					base = in.Interface
				}
				if !need || base == "" {
					continue
				}
				ipv6 := fam == Inet6
				// The instance's MAC when use_vmac gave one
				// (VRRP_VMAC_MAC_SPECIFIED), else the VRID's for the family.
				hw := net.HardwareAddr{0, 0, 0x5e, 0, 1, byte(in.VRID)}
				if ipv6 {
					hw[4] = 2
				}
				mac := hw.String()
				if in.VMAC != nil && in.VMAC.hwGiven {
					mac = strings.ToLower(in.VMAC.MAC)
				}
				k := key{base, mac}
				av := made[k]
				if av == nil {
					av = &AddrVMAC{Name: vmacName(prefix, in.VRID, ipv6, taken), Base: base, MAC: mac, IPv6: ipv6}
					taken[av.Name] = true
					made[k] = av
					in.AddrVMACs = append(in.AddrVMACs, av)
				}
				v.VMACDev = av.Name
			}
		}
	}
}
