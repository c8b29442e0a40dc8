package config

import (
	"fmt"
	"slices"
)

// The configuration's keyword values that are one of a few words are
// typed enums of one byte: the word is the text (String, MarshalText), so
// --dump-config and Canonical show what they always showed, and every
// package compares constants rather than strings. The zero value of each
// is "not given", shown as the empty string.

// enumText is the word of v in names, or v's number for a value no
// constant has (a zero-filled or corrupted value, never made by Load).
func enumText[T ~uint8](names []string, v T) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%T(%d)", v, uint8(v))
}

// enumParse is the value whose word is s; the empty word is the zero
// value.
func enumParse[T ~uint8](what string, names []string, s string) (T, error) {
	if i := slices.Index(names, s); i >= 0 {
		return T(i), nil
	}
	return 0, fmt.Errorf("%q is not a %s", s, what)
}

// Family is an address family: inet (IPv4) or inet6 (IPv6).
type Family uint8

// The address families.
const (
	FamilyUnset Family = iota
	Inet
	Inet6
)

var familyNames = []string{"", "inet", "inet6"}

func (f Family) String() string                { return enumText(familyNames, f) }
func (f Family) MarshalText() ([]byte, error)  { return []byte(f.String()), nil }
func (f *Family) UnmarshalText(b []byte) error { return unmarshalEnum(f, "family", familyNames, b) }

// ParseFamily reads inet or inet6.
func ParseFamily(s string) (Family, error) {
	if s == "" {
		return 0, fmt.Errorf("no family")
	}
	return enumParse[Family]("family (inet or inet6)", familyNames, s)
}

func unmarshalEnum[T ~uint8](v *T, what string, names []string, b []byte) error {
	x, err := enumParse[T](what, names, string(b))
	if err != nil {
		return err
	}
	*v = x
	return nil
}

// MethodKind is an IPVS forwarding method (lvs_method, lb_kind): NAT
// (masquerading), DR (direct routing) or TUN (tunnelling).
type MethodKind uint8

// The forwarding methods.
const (
	MethodUnset MethodKind = iota
	NAT
	DR
	TUN
)

var methodNames = []string{"", "NAT", "DR", "TUN"}

func (k MethodKind) String() string                { return enumText(methodNames, k) }
func (k MethodKind) MarshalText() ([]byte, error)  { return []byte(k.String()), nil }
func (k *MethodKind) UnmarshalText(b []byte) error { return unmarshalEnum(k, "method", methodNames, b) }

// Protocol is a virtual server's protocol: TCP, UDP or SCTP; unset for
// a fwmark service.
type Protocol uint8

// The protocols.
const (
	ProtocolUnset Protocol = iota
	TCP
	UDP
	SCTP
)

var protocolNames = []string{"", "TCP", "UDP", "SCTP"}

func (p Protocol) String() string               { return enumText(protocolNames, p) }
func (p Protocol) MarshalText() ([]byte, error) { return []byte(p.String()), nil }
func (p *Protocol) UnmarshalText(b []byte) error {
	return unmarshalEnum(p, "protocol", protocolNames, b)
}

// CheckerType is the kind of a real server's checker, named by its
// block's keyword.
type CheckerType uint8

// The checkers directord has (UnsupportedCheckers are not among them).
const (
	CheckerUnset CheckerType = iota
	CheckHTTPGet
	CheckSSLGet
	CheckTCP
	CheckMisc
	CheckUDP
	CheckDNS
	CheckSMTP
)

var checkerNames = []string{"", "HTTP_GET", "SSL_GET", "TCP_CHECK", "MISC_CHECK", "UDP_CHECK", "DNS_CHECK", "SMTP_CHECK"}

func (t CheckerType) String() string               { return enumText(checkerNames, t) }
func (t CheckerType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }
func (t *CheckerType) UnmarshalText(b []byte) error {
	return unmarshalEnum(t, "checker type", checkerNames, b)
}

// IsHTTP tells HTTP_GET and SSL_GET, the checkers with url blocks.
func (t CheckerType) IsHTTP() bool { return t == CheckHTTPGet || t == CheckSSLGet }

// State is a VRRP instance's initial state (state MASTER or BACKUP).
type State uint8

// The initial states.
const (
	StateUnset State = iota
	Backup
	Master
)

var stateNames = []string{"", "BACKUP", "MASTER"}

func (s State) String() string                { return enumText(stateNames, s) }
func (s State) MarshalText() ([]byte, error)  { return []byte(s.String()), nil }
func (s *State) UnmarshalText(b []byte) error { return unmarshalEnum(s, "state", stateNames, b) }

// AuthType is VRRPv2's auth_type: PASS or AH.
type AuthType uint8

// The authentication types.
const (
	AuthUnset AuthType = iota
	AuthPass
	AuthAH
)

var authNames = []string{"", "PASS", "AH"}

func (a AuthType) String() string                { return enumText(authNames, a) }
func (a AuthType) MarshalText() ([]byte, error)  { return []byte(a.String()), nil }
func (a *AuthType) UnmarshalText(b []byte) error { return unmarshalEnum(a, "auth_type", authNames, b) }

// FlushOnStop is lvs_flush_on_stop: what directord removes from the
// kernel's table when it stops.
type FlushOnStop uint8

// The lvs_flush_on_stop settings.
const (
	// FlushNone (not given) removes the virtual servers directord made
	// or adopted, as keepalived.
	FlushNone FlushOnStop = iota
	// FlushAll (lvs_flush_on_stop) empties the whole table.
	FlushAll
	// FlushVS (lvs_flush_on_stop VS) removes the configured virtual
	// servers.
	FlushVS
)

var flushNames = []string{"", "ALL", "VS"}

func (f FlushOnStop) String() string               { return enumText(flushNames, f) }
func (f FlushOnStop) MarshalText() ([]byte, error) { return []byte(f.String()), nil }
func (f *FlushOnStop) UnmarshalText(b []byte) error {
	return unmarshalEnum(f, "lvs_flush_on_stop", flushNames, b)
}

// TunnelType is a TUN method's tunnel: ipip (the default), gue or gre;
// unset for the other methods.
type TunnelType uint8

// The tunnel types.
const (
	TunnelUnset TunnelType = iota
	TunnelIPIP
	TunnelGUE
	TunnelGRE
)

var tunnelNames = []string{"", "ipip", "gue", "gre"}

func (t TunnelType) String() string               { return enumText(tunnelNames, t) }
func (t TunnelType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }
func (t *TunnelType) UnmarshalText(b []byte) error {
	return unmarshalEnum(t, "tunnel type", tunnelNames, b)
}

// TunnelCsum is a TUN method's checksum option: nocsum (the default),
// csum or remcsum; unset for the other methods.
type TunnelCsum uint8

// The tunnel checksum options.
const (
	CsumUnset TunnelCsum = iota
	NoCsum
	Csum
	RemCsum
)

var csumNames = []string{"", "nocsum", "csum", "remcsum"}

func (c TunnelCsum) String() string               { return enumText(csumNames, c) }
func (c TunnelCsum) MarshalText() ([]byte, error) { return []byte(c.String()), nil }
func (c *TunnelCsum) UnmarshalText(b []byte) error {
	return unmarshalEnum(c, "tunnel checksum", csumNames, b)
}

// RuleAction is what a static_rules or virtual_rules line does with the
// packets it matches, in ip-rule's words: table (lookup), goto, nop,
// blackhole, unreachable or prohibit.
type RuleAction uint8

// The rule actions.
const (
	RuleActionUnset RuleAction = iota
	RuleTable
	RuleGoto
	RuleNop
	RuleBlackhole
	RuleUnreachable
	RuleProhibit
)

var ruleActionNames = []string{"", "table", "goto", "nop", "blackhole", "unreachable", "prohibit"}

func (a RuleAction) String() string               { return enumText(ruleActionNames, a) }
func (a RuleAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }
func (a *RuleAction) UnmarshalText(b []byte) error {
	return unmarshalEnum(a, "rule action", ruleActionNames, b)
}
