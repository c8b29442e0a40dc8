package ipvs

import (
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
			_ = nested(req.Data, attrDest, func(ad *netlink.AttributeDecoder) error {
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
