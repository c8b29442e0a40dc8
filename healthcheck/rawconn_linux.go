package healthcheck

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A probe's connection makes its socket calls itself, with RawSyscall,
// and waits on the runtime's poller through an *os.File; net.Dialer's
// connection would make them with Syscall.
//
// Why: Syscall tells the Go scheduler that the thread may block, and the
// scheduler's monitor (sysmon) takes the processor away from a thread
// that is in a system call at two of its ticks in a row, 20 µs apart,
// when no other processor is idle: on a one-CPU director that is every
// slow system call, and where system calls are slow (the User-Mode Linux
// guest of the benchmarks, a virtual machine under load) it hands the
// processor between threads at almost every call, and keeps the monitor
// ticking every 20 µs. Measured in the guest, the checker's CPU per check
// grew with the load until it served a fraction of its checks. These
// calls on non-blocking sockets never block, which is what RawSyscall
// asks of its callers.
//
// Of the socket options net.Dialer sets, TCP_NODELAY stays (without it
// the request of an SSL_GET waits for the acknowledgment of the
// handshake's last message, a delayed ACK: 40 ms a probe) and keepalive
// goes (a probe's connection lives for one request); so do the address
// lookups (getsockname, getpeername) of every connection.

// rawConn is a probe's TCP connection.
type rawConn struct {
	f      *os.File
	rc     syscall.RawConn
	remote netip.AddrPort
}

var _ net.Conn = (*rawConn)(nil)

// rawDial connects to t.Addr (from t.Bind, with t's mark and device) by
// deadline, which stays the connection's deadline; ctx ending stops the
// connecting.
func rawDial(ctx context.Context, t Target, deadline time.Time) (net.Conn, error) {
	addr := netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
	fail := func(call string, err error) error {
		if errno, ok := err.(syscall.Errno); ok {
			err = os.NewSyscallError(call, errno)
		}
		return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: err}
	}
	family := unix.AF_INET
	if addr.Addr().Is6() {
		family = unix.AF_INET6
	}
	// unix.Socket is a RawSyscall.
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fail("socket", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if err := setsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return nil, fail("setsockopt", err)
	}
	if t.Bind.Port() != 0 {
		// A fixed bind_port must be free again at once (see closeNow):
		// checks reuse it every cycle.
		if err := setsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return nil, fail("setsockopt", err)
		}
	}
	if t.Mark != 0 {
		if err := setsockoptInt(fd, unix.SOL_SOCKET, unix.SO_MARK, int32(t.Mark)); err != nil {
			return nil, fail("setsockopt", err)
		}
	}
	if t.Dev != "" {
		dev := []byte(t.Dev)
		if _, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE,
			uintptr(unsafe.Pointer(&dev[0])), uintptr(len(dev)), 0); e != 0 {
			return nil, fail("setsockopt", e)
		}
	}
	if t.Bind.IsValid() || t.Bind.Port() != 0 {
		b := t.Bind.Addr().Unmap()
		if !b.IsValid() {
			// A bind_port alone: any address of the target's family.
			b = netip.IPv4Unspecified()
			if family == unix.AF_INET6 {
				b = netip.IPv6Unspecified()
			}
		}
		sa, n, err := rawSockaddr(netip.AddrPortFrom(b, t.Bind.Port()), family)
		if err != nil {
			return nil, fail("bind", err)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(sa)), n); e != 0 {
			return nil, fail("bind", e)
		}
	}
	sa, n, err := rawSockaddr(addr, family)
	if err != nil {
		return nil, fail("connect", err)
	}
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(sa)), n)
	if e != 0 && e != unix.EINPROGRESS {
		return nil, fail("connect", e)
	}
	// The poller takes the descriptor from here: f owns and closes it.
	f := os.NewFile(uintptr(fd), "probe")
	ok = true
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fail("connect", err)
	}
	c := &rawConn{f: f, rc: rc, remote: addr}
	// The deadline of the whole probe, set once: each setting costs
	// clock readings.
	f.SetDeadline(deadline)
	if e == unix.EINPROGRESS {
		stop := context.AfterFunc(ctx, func() { f.SetDeadline(time.Now()) })
		// The poller's readiness is reset before the first call (an
		// edge before it is lost): the first call asks the socket itself
		// whether it connected, failed, or is still connecting; after a
		// wake-up, writable without an error is connected.
		var soerr syscall.Errno
		first := true
		err := rc.Write(func(fd uintptr) bool {
			v := int32(0)
			l := uint32(4)
			_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_ERROR,
				uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
			if e == 0 {
				e = syscall.Errno(v)
			}
			switch e {
			case 0:
			case unix.EINPROGRESS, unix.EALREADY:
				return false
			default:
				soerr = e
				return true
			}
			if !first {
				return true // writable after the wait, no error: connected
			}
			first = false
			var sa unix.RawSockaddrAny
			sl := uint32(unsafe.Sizeof(sa))
			_, _, e = unix.RawSyscall(unix.SYS_GETPEERNAME, fd, uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&sl)))
			if e == unix.ENOTCONN {
				return false // still connecting
			}
			soerr = e
			return true
		})
		stop()
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case err == nil && soerr != 0:
			err = soerr
		}
		if err != nil {
			c.Close()
			return nil, fail("connect", err)
		}
	}
	return c, nil
}

// rawSockaddr is a's sockaddr of family, and its length.
func rawSockaddr(a netip.AddrPort, family int) (unsafe.Pointer, uintptr, error) {
	port := a.Port()
	switch {
	case family == unix.AF_INET && a.Addr().Is4():
		sa := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.Addr().As4()}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		return unsafe.Pointer(sa), unsafe.Sizeof(*sa), nil
	case family == unix.AF_INET6 && a.Addr().Is6():
		sa := &unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: a.Addr().As16()}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		if z := a.Addr().Zone(); z != "" {
			// A zone is an interface's index or name, as net reads it.
			if i, err := strconv.ParseUint(z, 10, 32); err == nil {
				sa.Scope_id = uint32(i)
			} else {
				ifi, err := net.InterfaceByName(z)
				if err != nil {
					return nil, 0, err
				}
				sa.Scope_id = uint32(ifi.Index)
			}
		}
		return unsafe.Pointer(sa), unsafe.Sizeof(*sa), nil
	}
	return nil, 0, syscall.EAFNOSUPPORT // bindto of the other family
}

func setsockoptInt(fd, level, opt int, v int32) error {
	if _, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&v)), 4, 0); e != 0 {
		return e
	}
	return nil
}

func (c *rawConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			if errno != unix.EINTR {
				return errno != unix.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

func (c *rawConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		var n uintptr
		var errno syscall.Errno
		err := c.rc.Write(func(fd uintptr) bool {
			for {
				n, _, errno = unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done))
				if errno != unix.EINTR {
					return errno != unix.EAGAIN
				}
			}
		})
		switch {
		case err != nil:
			return done, c.opError("write", err)
		case errno != 0:
			return done, c.opError("write", os.NewSyscallError("write", errno))
		}
		done += int(n)
	}
	return done, nil
}

// Close closes with a reset (linger 0), as every probe's connection is
// closed (closeNow).
func (c *rawConn) Close() error {
	c.rc.Control(func(fd uintptr) {
		l := unix.Linger{Onoff: 1, Linger: 0}
		unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_LINGER,
			uintptr(unsafe.Pointer(&l)), unsafe.Sizeof(l), 0)
	})
	return c.f.Close()
}

// quiet tells whether nothing waits to be read on the connection, not
// even its end: an idle kept connection must be (quiet), or the server
// said something (a 408, a close) that is not the answer to the next
// request.
func (c *rawConn) quiet() bool {
	ok := false
	c.rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		ok = errno == unix.EAGAIN
	})
	return ok
}

func (c *rawConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Addr: c.RemoteAddr(), Err: err}
}

// LocalAddr is the connection's address on this director (getsockname,
// when asked: probes do not).
func (c *rawConn) LocalAddr() net.Addr {
	var a net.Addr = &net.TCPAddr{}
	c.rc.Control(func(fd uintptr) {
		if sa, err := unix.Getsockname(int(fd)); err == nil {
			switch sa := sa.(type) {
			case *unix.SockaddrInet4:
				a = &net.TCPAddr{IP: sa.Addr[:], Port: sa.Port}
			case *unix.SockaddrInet6:
				a = &net.TCPAddr{IP: sa.Addr[:], Port: sa.Port}
			}
		}
	})
	return a
}

func (c *rawConn) RemoteAddr() net.Addr               { return net.TCPAddrFromAddrPort(c.remote) }
func (c *rawConn) SetDeadline(t time.Time) error      { return c.f.SetDeadline(t) }
func (c *rawConn) SetReadDeadline(t time.Time) error  { return c.f.SetReadDeadline(t) }
func (c *rawConn) SetWriteDeadline(t time.Time) error { return c.f.SetWriteDeadline(t) }
