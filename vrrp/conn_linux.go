package vrrp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Default VRRP multicast groups (RFC 5798 section 5.1.1.2 and 5.1.2.2).
var (
	Group4 = netip.MustParseAddr("224.0.0.18")
	Group6 = netip.MustParseAddr("ff02::12")
)

// Conn sends and receives VRRP on one interface for one address family: a
// raw IP socket for protocol 112, joined to the VRRP multicast group on the
// interface, sending with TTL (hop limit) 255 and reading the TTL, the
// destination and the interface of every packet from control messages.
//
// # Network namespaces
//
// A Conn belongs to the network namespace of the thread that opened it;
// open it from a goroutine locked to a thread inside the namespace.
type Conn struct {
	ifi   *net.Interface
	ipv6  bool
	group netip.Addr
	c4    *ipv4.PacketConn
	c6    *ipv6.PacketConn
	raw   net.PacketConn
	ah    *ahConn // protocol 51 (auth_type AH): ahconn_linux.go
	oob   []byte  // Read's control messages
}

// OpenConn opens a VRRP socket on ifname for IPv4 (ipv6 false) or IPv6,
// joined to group (Group4 or Group6 unless configured otherwise; an
// invalid group joins none, for unicast only).
func OpenConn(ifname string, ipv6Family bool, group netip.Addr) (*Conn, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("vrrp: interface %s: %w", ifname, err)
	}
	c := &Conn{ifi: ifi, ipv6: ipv6Family, group: group, oob: make([]byte, 256)}
	network, any := "ip4:112", "0.0.0.0"
	if ipv6Family {
		network, any = "ip6:112", "::"
	}
	c.raw, err = net.ListenPacket(network, any)
	if err != nil {
		return nil, fmt.Errorf("vrrp: open %s socket on %s: %w", network, ifname, err)
	}
	if err := c.setup(); err != nil {
		c.raw.Close()
		return nil, fmt.Errorf("vrrp: set up socket on %s: %w", ifname, err)
	}
	return c, nil
}

// multicaster is what ipv4.PacketConn and ipv6.PacketConn share.
type multicaster interface {
	SetMulticastInterface(*net.Interface) error
	SetMulticastLoopback(bool) error
	JoinGroup(*net.Interface, net.Addr) error
}

func (c *Conn) setup() error {
	var m multicaster
	var err error
	if !c.ipv6 {
		c.c4 = ipv4.NewPacketConn(c.raw)
		m = c.c4
		err = errors.Join(
			c.c4.SetControlMessage(ipv4.FlagTTL|ipv4.FlagDst|ipv4.FlagInterface, true),
			c.c4.SetMulticastTTL(255),
			c.c4.SetTTL(255))
	} else {
		c.c6 = ipv6.NewPacketConn(c.raw)
		m = c.c6
		err = errors.Join(
			c.c6.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagDst|ipv6.FlagInterface, true),
			c.c6.SetMulticastHopLimit(255),
			c.c6.SetHopLimit(255))
	}
	if err != nil {
		return err
	}
	if err := errors.Join(m.SetMulticastInterface(c.ifi), m.SetMulticastLoopback(false), c.multicastAllOff()); err != nil {
		return err
	}
	if c.group.IsValid() {
		return m.JoinGroup(c.ifi, &net.IPAddr{IP: c.group.AsSlice()})
	}
	return nil
}

// multicastAllOff makes the socket receive only the groups it joined
// itself (IP_MULTICAST_ALL / IPV6_MULTICAST_ALL default to every group any
// socket joined), so that instances with other mcast_dst_ip do not hear
// each other's adverts.
func (c *Conn) multicastAllOff() error {
	rc, ok := c.raw.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := rc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		if c.ipv6 {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, 29 /* IPV6_MULTICAST_ALL */, 0)
		} else {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, 49 /* IP_MULTICAST_ALL */, 0)
		}
	})
	return errors.Join(err, serr)
}

// Interface is the interface the Conn was opened on.
func (c *Conn) Interface() *net.Interface { return c.ifi }

// Close closes the socket.
func (c *Conn) Close() error { return c.raw.Close() }

// Read reads one VRRP message into b (which must also hold an IPv4
// packet's header). Packets that arrive on another interface (a raw socket
// sees every interface) are skipped. A packet that cannot be taken for
// what the socket says of it (parseDatagram) returns a *DecodeError with
// the reason to count.
func (c *Conn) Read(b []byte) (int, Received, error) {
	if c.ah != nil {
		return c.readAH(b)
	}
	ipc, ok := c.raw.(*net.IPConn)
	if !ok {
		return 0, Received{}, fmt.Errorf("vrrp: socket of type %T", c.raw)
	}
	for {
		n, oobn, _, from, err := ipc.ReadMsgIP(b, c.oob)
		if err != nil {
			return 0, Received{}, err
		}
		var src netip.Addr
		if from != nil {
			src, _ = netip.AddrFromSlice(from.IP)
		}
		msg, r, err := parseDatagram(c.ipv6, b[:n], c.oob[:oobn], src)
		if r.IfIndex != 0 && r.IfIndex != c.ifi.Index {
			continue // another interface's, whatever it holds
		}
		if err != nil {
			return 0, r, err
		}
		return copy(b, msg), r, nil
	}
}

// Write sends a VRRP message from src to dst (the group, or a unicast peer).
func (c *Conn) Write(b []byte, src, dst netip.Addr) error {
	to := &net.IPAddr{IP: dst.AsSlice()}
	if c.ah != nil {
		return c.writeAH(b, to)
	}
	if c.c4 != nil {
		cm := &ipv4.ControlMessage{IfIndex: c.ifi.Index, Src: src.AsSlice()}
		_, err := c.c4.WriteTo(b, cm, to)
		return err
	}
	if dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() {
		to.Zone = c.ifi.Name
	}
	hops := 255
	if !dst.IsMulticast() {
		hops = 0 // the socket's: SetUnicastTTL
	}
	cm := &ipv6.ControlMessage{IfIndex: c.ifi.Index, Src: src.AsSlice(), HopLimit: hops}
	_, err := c.c6.WriteTo(b, cm, to)
	return err
}

// PrimaryAddr returns the address adverts on ifi come from: the first IPv4
// address for IPv4, the link-local address for IPv6 (RFC 5798 section
// 5.1.2.1).
func PrimaryAddr(ifi *net.Interface, ipv6Family bool) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(ipn.IP)
		ip = ip.Unmap()
		if !ipv6Family && ip.Is4() {
			return ip, nil
		}
		if ipv6Family && ip.Is6() && ip.IsLinkLocalUnicast() {
			return ip, nil
		}
	}
	return netip.Addr{}, errors.New("no suitable address on " + ifi.Name)
}

// SetUnicastTTL sets the TTL (hop limit) of adverts sent to unicast peers:
// unicast_ttl; -1 leaves the kernel's default. Multicast adverts keep 255.
func (c *Conn) SetUnicastTTL(ttl int) error {
	switch {
	case c.ah != nil:
		return nil // AH writes its own IPv4 header
	case c.c4 != nil:
		return c.c4.SetTTL(ttl)
	default:
		return c.c6.SetHopLimit(ttl)
	}
}
