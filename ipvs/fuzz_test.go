package ipvs

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/directord/directord/internal/fuzztest"
)

// FuzzDecode feeds the decoders what a kernel (or anything on the other
// end of the socket) might send: they must not panic, and a service or
// destination they accept must survive our own encoding unchanged.
//
// ipvsadm's captured messages are its known-good seeds: each one that
// adds, sets or reports a service must decode to a valid one, and each
// destination to a destination, asserted inside the target so that a
// target whose decoders stop reaching their code fails at once.
func FuzzDecode(f *testing.F) {
	known := map[string]bool{}
	for _, e := range readCaptureF(f) {
		for _, b := range append(e.replies, e.requests...) {
			f.Add(b)
			known[string(b)] = true
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztest.Bound(t)
		var m genetlink.Message
		if m.UnmarshalBinary(b) != nil {
			if known[string(b)] {
				t.Fatalf("captured message %x does not unmarshal", b)
			}
			return
		}
		if known[string(b)] {
			switch m.Header.Command {
			case cmdNewService, cmdSetService:
				if s, err := serviceFromMessage(m); err != nil || !s.Addr.IsValid() && s.FWMark == 0 {
					t.Fatalf("captured service %x: %+v, %v", b, s, err)
				}
			case cmdNewDest, cmdSetDest:
				if _, err := destFromMessage(m, IPv4); err != nil {
					if _, err6 := destFromMessage(m, IPv6); err6 != nil {
						t.Fatalf("captured destination %x: %v", b, err)
					}
				}
			}
		}
		if s, err := serviceFromMessage(m); err == nil && s.validate(true) == nil {
			s.Stats = Stats{}
			s.Flags &= userFlags
			req, err := serviceRequest(cmdNewService, &s)
			if err != nil {
				t.Fatal(err)
			}
			back, err := serviceFromMessage(req)
			if err != nil {
				t.Fatalf("%+v: re-decoding: %v", s, err)
			}
			if back.Netmask == 0 || s.Netmask == 0 {
				back.Netmask, s.Netmask = 0, 0 // 0 encodes as the whole address
			}
			if !reflect.DeepEqual(back, s) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", back, s)
			}
		}
		if d, err := destFromMessage(m, IPv4); err == nil && d.validate() == nil {
			var back Destination
			req, _ := destRequest(cmdNewDest, vs1, &d)
			_ = nested(req.Data, attrDest, func(ad *attrs) error {
				back, err = decodeDest(ad, IPv4)
				return err
			})
			d.Counters = nil
			if err != nil || !reflect.DeepEqual(back, d) {
				t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, back, d)
			}
		}
		_, _ = daemonFromMessage(m)
		_, _ = timeoutsFromMessage(m)
		_, _ = infoFromMessage(m)
	})
}

// FuzzAttrs holds our attribute reader (attrs) to netlink.AttributeDecoder's
// answers on any input: the same attributes, types and payloads, the
// same integers and strings, and an error at the same place. Each
// attribute is read as what its first payload byte picks (an integer of
// each size, a string, or nested attributes, compared recursively), so
// that wrong-length reads, which stop both readers, are reached too.
func FuzzAttrs(f *testing.F) {
	known := map[string]bool{}
	for _, e := range readCaptureF(f) {
		for _, b := range append(e.replies, e.requests...) {
			if len(b) > 4 {
				f.Add(b[4:]) // past the generic netlink header
				known[string(b[4:])] = true
			}
		}
	}
	f.Add([]byte{0, 0, 1, 0})
	f.Add([]byte{5, 0, 1, 0, 'r', 0, 0, 0})
	f.Add([]byte{3, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztest.Bound(t)
		if known[string(b)] {
			// A captured message's attributes are all well formed.
			ad, err := newAttrs(b)
			n := 0
			for err == nil && ad.next() {
				n++
			}
			if err = cmpErr(err, ad.err()); err != nil || n == 0 {
				t.Fatalf("captured attributes %x: %d read, %v", b, n, err)
			}
		}
		sameAttrs(t, b, 0)
	})
}

func sameAttrs(t *testing.T, b []byte, depth int) {
	t.Helper()
	lib, lerr := netlink.NewAttributeDecoder(b)
	our, oerr := newAttrs(b)
	if (lerr == nil) != (oerr == nil) {
		t.Fatalf("%x: new: library %v, ours %v", b, lerr, oerr)
	}
	if lerr != nil {
		return
	}
	for n := 0; ; n++ {
		ln, on := lib.Next(), our.next()
		if ln != on {
			t.Fatalf("%x: attribute %d: library next %v, ours %v", b, n, ln, on)
		}
		if !ln {
			break
		}
		if lib.Type() != our.typ() || !bytes.Equal(lib.Bytes(), our.data()) {
			t.Fatalf("%x: attribute %d: library %d %x, ours %d %x", b, n, lib.Type(), lib.Bytes(), our.typ(), our.data())
		}
		pick := byte(0)
		if d := our.data(); len(d) > 0 {
			pick = d[0]
		}
		var lv, ov any
		switch pick % 6 {
		case 0:
			lv, ov = lib.Uint8(), our.uint8()
		case 1:
			lv, ov = lib.Uint16(), our.uint16()
		case 2:
			lv, ov = lib.Uint32(), our.uint32()
		case 3:
			lv, ov = lib.Uint64(), our.uint64()
		case 4:
			lv, ov = lib.String(), our.string()
		case 5:
			if depth < 4 {
				sameAttrs(t, our.data(), depth+1)
			}
		}
		if lv != ov {
			t.Fatalf("%x: attribute %d: library read %v, ours %v", b, n, lv, ov)
		}
		if (lib.Err() == nil) != (our.err() == nil) {
			t.Fatalf("%x: attribute %d: library error %v, ours %v", b, n, lib.Err(), our.err())
		}
	}
	if (lib.Err() == nil) != (our.err() == nil) {
		t.Fatalf("%x: at the end: library error %v, ours %v", b, lib.Err(), our.err())
	}
}
