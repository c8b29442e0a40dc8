package control

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the user ID of the process at the other end of c, as the
// kernel recorded it when that process connected (SO_PEERCRED).
func peerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("peer credentials: %T is not a Unix socket connection", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return 0, fmt.Errorf("peer credentials: %w", cerr)
	}
	return cred.Uid, nil
}

// restrictBeforeBind makes the socket's inode 0600, which bind gives the
// socket file.
func restrictBeforeBind(fd uintptr) error {
	if err := unix.Fchmod(int(fd), 0o600); err != nil {
		return fmt.Errorf("fchmod socket: %w", err)
	}
	return nil
}
