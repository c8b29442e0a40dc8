//go:build !linux

package control

import (
	"errors"
	"net"
)

// peerUID fails: peer credentials are read on Linux only, so elsewhere
// every client is refused.
func peerUID(net.Conn) (uint32, error) {
	return 0, errors.New("peer credentials are read on Linux only")
}

// restrictBeforeBind does nothing; Listen's Chmod restricts the socket
// after the bind.
func restrictBeforeBind(uintptr) error { return nil }
