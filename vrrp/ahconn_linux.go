package vrrp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
)

// ahConn is what a Conn for auth_type AH adds: keepalived sends and
// receives those adverts on raw sockets of protocol 51, and writes the IPv4
// header itself (IP_HDRINCL), since the ICV covers it.
type ahConn struct {
	ip  *net.IPConn
	pkt []byte // the last packet read
	oob []byte
}

// OpenAHConn opens an IPv4 VRRP socket for auth_type AH on ifname, joined
// to group (invalid for unicast only). Its Write takes whole IPv4 packets
// (AppendAH); its Read returns the VRRP message, with the packet in
// Received.Packet for VerifyAH.
func OpenAHConn(ifname string, group netip.Addr) (*Conn, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("vrrp: interface %s: %w", ifname, err)
	}
	c := &Conn{ifi: ifi, group: group}
	c.raw, err = net.ListenPacket("ip4:51", "0.0.0.0")
	if err != nil {
		return nil, fmt.Errorf("vrrp: open AH socket on %s: %w", ifname, err)
	}
	ip := c.raw.(*net.IPConn)
	c.ah = &ahConn{ip: ip, pkt: make([]byte, 9000), oob: ipv4.NewControlMessage(ipv4.FlagInterface)}
	err = c.setup()
	if err == nil {
		err = setHeaderIncluded(ip)
	}
	if err != nil {
		c.raw.Close()
		return nil, fmt.Errorf("vrrp: set up AH socket on %s: %w", ifname, err)
	}
	return c, nil
}

func setHeaderIncluded(ip *net.IPConn) error {
	raw, err := ip.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_HDRINCL, 1)
	})
	return errors.Join(err, serr)
}

// readAH reads one AH packet from the Conn's interface and copies its VRRP
// message into b. AH carrying another protocol is skipped, as keepalived
// ignores it; another packet ParseAH refuses is returned with its
// *DecodeError, to be counted.
func (c *Conn) readAH(b []byte) (int, Received, error) {
	for {
		n, oobn, _, _, err := c.ah.ip.ReadMsgIP(c.ah.pkt, c.ah.oob)
		if err != nil {
			return 0, Received{}, err
		}
		var r Received
		var cm ipv4.ControlMessage
		if oobn > 0 && cm.Parse(c.ah.oob[:oobn]) == nil {
			r.IfIndex = cm.IfIndex
		}
		if r.IfIndex != 0 && r.IfIndex != c.ifi.Index {
			continue
		}
		r.Packet = c.ah.pkt[:n]
		h, msg, err := ParseAH(r.Packet)
		if de := (*DecodeError)(nil); errors.As(err, &de) && de.Reason == DropType {
			continue // AH over another protocol: the host's IPsec, not VRRP
		}
		if err != nil {
			return 0, r, err
		}
		r.Src, r.Dst, r.TTL = h.Src, h.Dst, h.TTL
		return copy(b, msg), r, nil
	}
}

// writeAH sends a whole IPv4 packet out of the Conn's interface.
func (c *Conn) writeAH(pkt []byte, to *net.IPAddr) error {
	oob := (&ipv4.ControlMessage{IfIndex: c.ifi.Index}).Marshal()
	_, _, err := c.ah.ip.WriteMsgIP(pkt, oob, to)
	return err
}

// verifyAH applies keepalived's AH checks to a packet whose VRRP message
// names this instance: the ICV and SPI, then the sequence number.
func (in *instance) verifyAH(pkt []byte, backup bool) bool {
	if len(pkt) == 0 || !VerifyAH(pkt, &in.ah.Key, in.ah.Unicast) {
		return false
	}
	h, _, err := ParseAH(pkt)
	return err == nil && in.ah.Accept(h.Seq, backup)
}
