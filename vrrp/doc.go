// Package vrrp implements the Virtual Router Redundancy Protocol, versions 2
// (RFC 3768, IPv4) and 3 (RFC 5798 and RFC 9568, IPv4 and IPv6), as
// keepalived speaks it, so that a director pair may be one directord and one
// keepalived.
//
// The package is split as Seesaw's ha package is: the pure parts take
// bytes, events, configuration and an injected clock and touch no socket,
// so that they are tested without root; the network side is one small
// _linux file per kernel interface. The pure parts: the packet codec
// (packet.go, ah.go, announce.go), the state machine and its driver
// (machine.go, driver.go), the translation of an instance's configuration
// into its socket, Params, Expect and addresses (settings.go), what it
// tracks and the priority that gives (priority.go, track.go), sync groups,
// their shared fault included (syncgroup.go), which adverts an instance
// takes and what it notes of them (receive.go), the set of kernel entries
// directord claims and a reload hands over (installed.go), the Node's
// notify and hand-over decisions and its status report (node.go), reload
// plans (reload.go), what a transition does in which order, what a reload
// hands from an instance to its successor and when garp_extra_if
// announces (transition.go), and the sysctls the Node sets and hands over
// (sysctl.go). node_linux.go opens the sockets, wires them to these and
// carries out their plans.
//
// # Packets
//
// Advert is one advertisement. Unmarshal decodes and checks what the packet
// alone can tell (length, version, type, address count, checksum) without
// allocating when the Advert's address slice has room; AppendMarshal encodes
// into a caller's buffer. Check then applies the receive rules of the RFCs
// against what an instance expects (TTL, VRID, authentication, interval).
// Every reason a packet is dropped is a DropReason, for counters.
package vrrp
