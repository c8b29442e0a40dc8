package vrrp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
)

// Rules installs policy routing rules (virtual_rules, static_rules) and
// removes exactly those it installed.
type Rules struct {
	h     *netlink.Handle
	added *installed[string, *netlink.Rule]
}

// NewRules returns a Rules working through h.
func NewRules(h *netlink.Handle) *Rules {
	return &Rules{h: h, added: newInstalled[string, *netlink.Rule]()}
}

var ruleActions = map[config.RuleAction]uint8{config.RuleTable: nl.FR_ACT_TO_TBL, config.RuleGoto: nl.FR_ACT_GOTO,
	config.RuleNop: nl.FR_ACT_NOP, config.RuleBlackhole: nl.FR_ACT_BLACKHOLE,
	config.RuleUnreachable: nl.FR_ACT_UNREACHABLE, config.RuleProhibit: nl.FR_ACT_PROHIBIT}

func ipNet(p netip.Prefix) *net.IPNet {
	if !p.IsValid() {
		return nil
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// toRule converts a configured rule into the request keepalived's
// netlink_rule sends.
func toRule(cr config.Rule) *netlink.Rule {
	r := netlink.NewRule()
	r.Family = unix.AF_INET
	if cr.Family == config.Inet6 {
		r.Family = unix.AF_INET6
	}
	r.Priority = int(cr.Priority)
	r.Type = ruleActions[cr.Action]
	r.Table = unix.RT_TABLE_UNSPEC
	if cr.Action == config.RuleTable {
		r.Table = int(cr.Table)
	}
	r.Src, r.Dst = ipNet(cr.From), ipNet(cr.To)
	r.Invert = cr.Not
	r.Tos = uint(cr.TOS)
	if cr.HasFwMark {
		r.Mark = cr.FwMark
		if cr.HasFwMask {
			m := cr.FwMask
			r.Mask = &m
		} else if cr.FwMark == 0 {
			// The library sends no mark 0 without a mask; the kernel's
			// default mask for a mark given alone is all ones.
			m := uint32(0xffffffff)
			r.Mask = &m
		}
	}
	if cr.Realms != 0 {
		r.Flow = int(cr.Realms)
	}
	r.SuppressPrefixlen, r.SuppressIfgroup = cr.SuppressPrefixLen, cr.SuppressIfGroup
	r.IifName, r.OifName = cr.IIf, cr.OIf
	if cr.Action == config.RuleGoto {
		r.Goto = int(cr.Goto)
	}
	if cr.HasUIDRange {
		r.UIDRange = netlink.NewRuleUIDRange(cr.UIDRange[0], cr.UIDRange[1])
	}
	if cr.HasSPort {
		r.Sport = netlink.NewRulePortRange(cr.SPort[0], cr.SPort[1])
	}
	if cr.HasDPort {
		r.Dport = netlink.NewRulePortRange(cr.DPort[0], cr.DPort[1])
	}
	r.IPProto = int(cr.IPProto)
	if cr.HasProtocol {
		r.Protocol = cr.Protocol
	}
	return r
}

func ruleString(cr config.Rule) string {
	from, to := "all", ""
	if cr.From.IsValid() {
		from = cr.From.String()
	}
	if cr.To.IsValid() {
		to = " to " + cr.To.String()
	}
	return fmt.Sprintf("%d: from %s%s %s", cr.Priority, from, to, cr.Action)
}

// Add installs cr; a rule already there is left alone and not claimed.
// A rule naming an interface that does not exist is refused, as
// keepalived refuses it (the kernel would take the name).
func (r *Rules) Add(cr config.Rule) error {
	for _, dev := range []string{cr.IIf, cr.OIf} {
		if dev == "" {
			continue
		}
		if _, err := r.h.LinkByName(dev); err != nil {
			return fmt.Errorf("add rule %s: interface %s: %w", ruleString(cr), dev, err)
		}
	}
	return r.added.add(ruleKey(cr), func() (*netlink.Rule, bool, error) {
		nr := toRule(cr)
		err := r.h.RuleAdd(nr)
		if errors.Is(err, syscall.EEXIST) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("add rule %s: %w", ruleString(cr), err)
		}
		return nr, true, nil
	})
}

// Clear removes cr whoever installed it, as keepalived clears its static
// rules' leftovers at start; a rule not there is no error.
func (r *Rules) Clear(cr config.Rule) error {
	if err := r.h.RuleDel(toRule(cr)); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("remove rule %s: %w", ruleString(cr), err)
	}
	return nil
}

// Remove removes cr if Add installed it.
func (r *Rules) Remove(cr config.Rule) error {
	return r.added.remove(ruleKey(cr), func(nr *netlink.Rule) error {
		if err := r.h.RuleDel(nr); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("remove rule %s: %w", ruleString(cr), err)
		}
		return nil
	})
}

// Has reports whether Add installed cr and it is still claimed.
func (r *Rules) Has(cr config.Rule) bool { return r.added.has(ruleKey(cr)) }

// RemoveAll removes every rule Add installed.
func (r *Rules) RemoveAll() error {
	return r.added.removeAll(func(_ string, nr *netlink.Rule) error {
		if err := r.h.RuleDel(nr); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("remove rule %s: %w", nr, err)
		}
		return nil
	})
}

// take moves the claim on the rule cr from another Rules to r: the rule
// stays and r will remove it. It reports whether from had installed it.
func (r *Rules) take(from *Rules, cr config.Rule) bool {
	k := ruleKey(cr)
	return r.added.take(from.added, k, k)
}

// installRules adds (on) or removes the instance's virtual rules.
func (in *instance) installRules(on bool) {
	for _, r := range in.cfg.Rules {
		var err error
		if on {
			err = in.node.rules.Add(r)
		} else {
			err = in.node.rules.Remove(r)
		}
		if err != nil {
			in.logger().Error("vrrp rule", "err", err)
		}
	}
}
