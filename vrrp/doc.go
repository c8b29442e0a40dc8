// Package vrrp implements the Virtual Router Redundancy Protocol, versions 2
// (RFC 3768, IPv4) and 3 (RFC 5798 and RFC 9568, IPv4 and IPv6), as
// keepalived speaks it, so that a director pair may be one directord and one
// keepalived.
//
// The package is split as Seesaw's ha package is: the pure parts (the packet
// codec in packet.go, and later the state machine) take bytes, events and an
// injected clock and touch no socket, so that they are tested without root;
// the network side is one small file per kernel interface.
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
