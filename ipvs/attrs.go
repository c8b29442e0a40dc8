package ipvs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// attrs reads a message's netlink attributes where they lie, one after
// the other: what netlink.AttributeDecoder does, with the same rules for
// what is malformed (FuzzAttrs holds the two to the same answers), but
// without its allocations. The library's decoder is a heap object, and
// its Next copies every attribute's payload into a new slice; reading
// back 1,000 services x 10 destinations made 532,000 allocations and
// 25 MB of garbage a resync, which a daemon that resyncs every 30 s
// carried as RSS. An attrs lives on the stack and its data aliases the
// message, so it must not be kept past the decoding of the message:
// strings are copied (or interned, for the schedulers' names).
//
// Encoding stays with netlink.AttributeEncoder: requests are few and
// small.
type attrs struct {
	b   []byte
	i   int
	t   uint16
	d   []byte
	bad error
}

const (
	attrHeaderLen = 4
	attrTypeMask  = 0x3fff // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

var errAttr = errors.New("netlink attribute of a bad length")

func attrAlign(n int) int { return (n + 3) &^ 3 }

// newAttrs checks that each attribute of b has its whole header, as
// netlink.NewAttributeDecoder does, and returns a reader of them.
func newAttrs(b []byte) (attrs, error) {
	for i := 0; i < len(b); {
		if len(b)-i < attrHeaderLen {
			return attrs{}, errAttr
		}
		l := int(binary.NativeEndian.Uint16(b[i:]))
		i += attrAlign(max(l, attrHeaderLen))
	}
	return attrs{b: b}, nil
}

// next moves to the next attribute; false at the end or at an error.
func (a *attrs) next() bool {
	if a.bad != nil || a.i >= len(a.b) {
		return false
	}
	rest := a.b[a.i:]
	if len(rest) < attrHeaderLen {
		a.bad = errAttr
		return false
	}
	l := int(binary.NativeEndian.Uint16(rest))
	a.t = binary.NativeEndian.Uint16(rest[2:]) & attrTypeMask
	switch {
	case l > len(rest) || l != 0 && l < attrHeaderLen:
		a.bad = errAttr
		return false
	case l == 0:
		a.d = rest[:0]
		a.i += attrHeaderLen
	default:
		a.d = rest[attrHeaderLen:l]
		a.i += attrAlign(l)
	}
	return true
}

// typ is the current attribute's type, without its flags.
func (a *attrs) typ() uint16 { return a.t }

// data is the current attribute's payload, aliasing the message.
func (a *attrs) data() []byte { return a.d }

// err is the first error met.
func (a *attrs) err() error { return a.bad }

// fail records err as the reader's, unless it has one already.
func (a *attrs) fail(err error) {
	if a.bad == nil {
		a.bad = err
	}
}

func (a *attrs) sized(n int, what string) []byte {
	if a.bad != nil {
		return nil
	}
	if len(a.d) != n {
		a.bad = fmt.Errorf("netlink attribute %d is not a %s: %d bytes", a.t, what, len(a.d))
		return nil
	}
	return a.d
}

func (a *attrs) uint8() uint8 {
	if b := a.sized(1, "uint8"); b != nil {
		return b[0]
	}
	return 0
}

func (a *attrs) uint16() uint16 {
	if b := a.sized(2, "uint16"); b != nil {
		return binary.NativeEndian.Uint16(b)
	}
	return 0
}

func (a *attrs) uint32() uint32 {
	if b := a.sized(4, "uint32"); b != nil {
		return binary.NativeEndian.Uint32(b)
	}
	return 0
}

func (a *attrs) uint64() uint64 {
	if b := a.sized(8, "uint64"); b != nil {
		return binary.NativeEndian.Uint64(b)
	}
	return 0
}

// string is the payload without its trailing NULs. The names a table
// repeats in every service (the schedulers', sip) are not allocated.
func (a *attrs) string() string {
	if a.bad != nil {
		return ""
	}
	b := bytes.TrimRight(a.d, "\x00")
	switch string(b) {
	case "rr":
		return "rr"
	case "wrr":
		return "wrr"
	case "lc":
		return "lc"
	case "wlc":
		return "wlc"
	case "mh":
		return "mh"
	case "sh":
		return "sh"
	case "sip":
		return "sip"
	}
	return string(b)
}

// nested is a reader of the current attribute's payload; an error in it
// is the outer reader's too (nested's caller checks the inner's err and
// passes it on with fail, as AttributeDecoder.Nested does).
func (a *attrs) nested() (attrs, bool) {
	if a.bad != nil {
		return attrs{}, false
	}
	in, err := newAttrs(a.d)
	if err != nil {
		a.bad = err
		return attrs{}, false
	}
	return in, true
}
