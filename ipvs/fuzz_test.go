package ipvs

import (
	"reflect"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// FuzzDecode feeds the decoders what a kernel (or anything on the other
// end of the socket) might send: they must not panic, and a service or
// destination they accept must survive our own encoding unchanged.
func FuzzDecode(f *testing.F) {
	for _, e := range readCaptureF(f) {
		for _, b := range append(e.replies, e.requests...) {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m genetlink.Message
		if m.UnmarshalBinary(b) != nil {
			return
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
			d.ActiveConns, d.InactiveConns, d.PersistConns, d.Stats = 0, 0, 0, Stats{}
			if err != nil || !reflect.DeepEqual(back, d) {
				t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, back, d)
			}
		}
		_, _ = daemonFromMessage(m)
		_, _ = timeoutsFromMessage(m)
		_, _ = infoFromMessage(m)
	})
}
