package healthcheck

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRawConnNoDelay: a probe's connection sends at once (TCP_NODELAY):
// without it an SSL_GET's request waits for the acknowledgment of the
// handshake's last message, 40 ms a probe.
func TestRawConnNoDelay(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tg := Target{Addr: netip.MustParseAddrPort(ln.Addr().String()), Timeout: time.Second}
	c, err := tg.dial(context.Background(), time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := -1
	c.(*rawConn).rc.Control(func(fd uintptr) {
		v, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY)
	})
	if err != nil || v == 0 {
		t.Errorf("TCP_NODELAY %d, %v", v, err)
	}
}

// TestRawSockaddrZone: an IPv6 zone is an interface's index or its name.
func TestRawSockaddrZone(t *testing.T) {
	p, _, err := rawSockaddr(netip.MustParseAddrPort("[fe80::1%7]:443"), unix.AF_INET6)
	if err != nil {
		t.Fatal(err)
	}
	sa := (*unix.RawSockaddrInet6)(p)
	port := (*[2]byte)(unsafe.Pointer(&sa.Port)) // network order
	if sa.Scope_id != 7 || port[0] != 443>>8 || port[1] != 443&0xff {
		t.Errorf("scope %d port % x", sa.Scope_id, port[:])
	}
	p, _, err = rawSockaddr(netip.MustParseAddrPort("[fe80::1%lo]:443"), unix.AF_INET6)
	lo, lerr := net.InterfaceByName("lo")
	if err != nil || lerr != nil || (*unix.RawSockaddrInet6)(p).Scope_id != uint32(lo.Index) {
		t.Errorf("zone lo: %v %v", err, lerr)
	}
	if _, _, err := rawSockaddr(netip.MustParseAddrPort("[fe80::1%nosuch0]:443"), unix.AF_INET6); err == nil {
		t.Error("an unknown interface's zone: no error")
	}
}
