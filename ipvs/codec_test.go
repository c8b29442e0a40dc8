package ipvs

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// capture is testdata/ipvsadm-capture.txt: the generic netlink payloads
// (genetlink header and attributes) that ipvsadm 1.31 sent to, and got
// from, the IPVS of a real 6.1 kernel, read off strace in the User-Mode
// Linux guest by testdata/capture/. These are the known-good bytes: our
// encoder must produce ipvsadm's requests and our decoder must read the
// kernel's replies.
type capture map[string]struct{ requests, replies [][]byte }

func readCapture(t *testing.T) capture { return readCaptureF(t) }

func readCaptureF(t testing.TB) capture {
	t.Helper()
	f, err := os.Open("testdata/ipvsadm-capture.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := capture{}
	cmd := ""
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		if rest, ok := strings.CutPrefix(line, "# ipvsadm "); ok {
			cmd = rest
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("capture line %q", line)
		}
		b, err := hex.DecodeString(fields[2])
		if err != nil {
			t.Fatal(err)
		}
		if fields[2] == "0f010000" || strings.HasPrefix(fields[2], "0e01") {
			continue // ipvsadm's IPVS_CMD_GET_INFO before each command
		}
		e := c[cmd]
		if fields[0] == "request" {
			e.requests = append(e.requests, b)
		} else {
			e.replies = append(e.replies, b)
		}
		c[cmd] = e
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c capture) request(t *testing.T, cmd string) []byte {
	t.Helper()
	e, ok := c[cmd]
	if !ok || len(e.requests) == 0 {
		t.Fatalf("no request of ipvsadm %s in the capture", cmd)
	}
	return e.requests[0]
}

func (c capture) replies(t *testing.T, cmd string) []genetlink.Message {
	t.Helper()
	e, ok := c[cmd]
	if !ok || len(e.replies) == 0 {
		t.Fatalf("no reply to ipvsadm %s in the capture", cmd)
	}
	var out []genetlink.Message
	for _, b := range e.replies {
		var m genetlink.Message
		if err := m.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// keep rewrites a request, keeping of each nested attribute only the
// attribute types listed for it: what ipvsadm sends beyond what the kernel
// reads for that command, we do not.
func keep(t *testing.T, msg []byte, types map[uint16][]uint16) []byte {
	t.Helper()
	ad, err := netlink.NewAttributeDecoder(msg[4:])
	if err != nil {
		t.Fatal(err)
	}
	ae := netlink.NewAttributeEncoder()
	for ad.Next() {
		want, ok := types[ad.Type()]
		if !ok {
			ae.Bytes(ad.Type()|ad.TypeFlags(), ad.Bytes())
			continue
		}
		inner, err := netlink.NewAttributeDecoder(ad.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		ae.Nested(ad.Type(), func(nae *netlink.AttributeEncoder) error {
			for inner.Next() {
				for _, w := range want {
					if inner.Type() == w {
						nae.Bytes(inner.Type()|inner.TypeFlags(), inner.Bytes())
					}
				}
			}
			return inner.Err()
		})
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte{}, msg[:4]...), b...)
}

var (
	serviceKeyAttrs = []uint16{svcAF, svcProtocol, svcAddr, svcPort, svcFWMark}
	destKeyAttrs    = []uint16{destAddrFamily, destAddr, destPort}
)

func marshal(t *testing.T, m genetlink.Message, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	vs1 = AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:80"))
	vs6 = AddrKey(UDP, netip.MustParseAddrPort("[2001:db8::1]:53"))
)

func TestRequestsMatchIpvsadm(t *testing.T) {
	c := readCapture(t)
	ip := netip.MustParseAddr
	keyOnly := map[uint16][]uint16{attrService: serviceKeyAttrs, attrDest: destKeyAttrs}
	destFull := map[uint16][]uint16{attrService: serviceKeyAttrs}
	tests := []struct {
		ipvsadm string
		op      Op
		keep    map[uint16][]uint16 // nil: byte for byte
	}{
		{"-A -t 192.0.2.1:80 -s rr", Op{Kind: AddService, Service: Service{ServiceKey: vs1, Scheduler: "rr"}}, nil},
		{"-A -t 192.0.2.3:443 -s wrr -p", Op{Kind: AddService, Service: Service{
			ServiceKey: AddrKey(TCP, netip.MustParseAddrPort("192.0.2.3:443")), Scheduler: "wrr",
			Flags: Persistent, Timeout: 360 * time.Second}}, nil},
		{"-A -u [2001:db8::1]:53 -s wlc -p 300 -M 64", Op{Kind: AddService, Service: Service{
			ServiceKey: vs6, Scheduler: "wlc", Flags: Persistent, Timeout: 300 * time.Second, Netmask: 64}}, nil},
		{"-A -f 7 -s sh -b sh-fallback,sh-port", Op{Kind: AddService, Service: Service{
			ServiceKey: MarkKey(IPv4, 7), Scheduler: "sh", Flags: SchedFlag1 | SchedFlag2}}, nil},
		{"-A -f 8 -6 -s mh -o", Op{Kind: AddService, Service: Service{
			ServiceKey: MarkKey(IPv6, 8), Scheduler: "mh", Flags: OnePacket}}, nil},
		{"-A --sctp-service 192.0.2.2:9 -s rr -p 60 -M 255.255.255.0 --pe sip", Op{Kind: AddService, Service: Service{
			ServiceKey: AddrKey(SCTP, netip.MustParseAddrPort("192.0.2.2:9")), Scheduler: "rr",
			Flags: Persistent, Timeout: time.Minute, Netmask: 24, PersistenceEngine: "sip"}}, nil},
		{"-E -t 192.0.2.1:80 -s wlc", Op{Kind: EditService, Service: Service{ServiceKey: vs1, Scheduler: "wlc"}}, nil},
		{"-D -t 192.0.2.1:80", Op{Kind: DelService, Service: Service{ServiceKey: vs1}}, keyOnly},
		{"-a -t 192.0.2.1:80 -r 192.0.2.10:8080 -g -w 3", Op{Kind: AddDest, Service: Service{ServiceKey: vs1},
			// ipvsadm gives a DR destination the service's port.
			Dest: Destination{Addr: ip("192.0.2.10"), Port: 80, Forward: Route, Weight: 3}}, destFull},
		{"-e -t 192.0.2.1:80 -r 192.0.2.10:80 -g -w 5 -x 100 -y 10", Op{Kind: EditDest, Service: Service{ServiceKey: vs1},
			Dest: Destination{Addr: ip("192.0.2.10"), Port: 80, Forward: Route, Weight: 5, UpperThreshold: 100, LowerThreshold: 10}}, destFull},
		{"-a -t 192.0.2.1:80 -r 192.0.2.12:8080 -m -w 0", Op{Kind: AddDest, Service: Service{ServiceKey: vs1},
			Dest: Destination{Addr: ip("192.0.2.12"), Port: 8080, Forward: Masquerade, Weight: 0}}, destFull},
		{"-a -t 192.0.2.1:80 -r 192.0.2.13 -i --tun-type gue --tun-port 6080 --tun-nocsum", Op{Kind: AddDest, Service: Service{ServiceKey: vs1},
			Dest: Destination{Addr: ip("192.0.2.13"), Port: 80, Forward: Tunnel, Weight: 1, TunnelType: 1, TunnelPort: 6080}}, destFull},
		{"-a -u [2001:db8::1]:53 -r [2001:db8::10]:53 -g -w 1", Op{Kind: AddDest, Service: Service{ServiceKey: vs6},
			Dest: Destination{Addr: ip("2001:db8::10"), Port: 53, Forward: Route, Weight: 1}}, destFull},
		{"-d -t 192.0.2.1:80 -r 192.0.2.10:8080", Op{Kind: DelDest, Service: Service{ServiceKey: vs1},
			Dest: Destination{Addr: ip("192.0.2.10"), Port: 8080}}, keyOnly},
	}
	for _, tt := range tests {
		t.Run(tt.ipvsadm, func(t *testing.T) {
			want := c.request(t, tt.ipvsadm)
			if tt.keep != nil {
				want = keep(t, want, tt.keep)
			}
			m, err := tt.op.message()
			got := marshal(t, m, err)
			if !bytes.Equal(got, want) {
				t.Errorf("%s:\n got %x\nwant %x", tt.op, got, want)
			}
		})
	}
}

func TestDaemonAndConfigRequestsMatchIpvsadm(t *testing.T) {
	c := readCapture(t)
	tests := []struct {
		ipvsadm string
		msg     func() (genetlink.Message, error)
		keep    map[uint16][]uint16
	}{
		{"--start-daemon master --mcast-interface dummy0 --syncid 5", func() (genetlink.Message, error) {
			return daemonRequest(cmdNewDaemon, &SyncDaemon{State: SyncMaster, Interface: "dummy0", SyncID: 5})
		}, nil},
		{"--start-daemon backup --mcast-interface dummy0 --syncid 7 --sync-maxlen 1400 --mcast-group 239.1.2.3 --mcast-port 8900 --mcast-ttl 2",
			func() (genetlink.Message, error) {
				return daemonRequest(cmdNewDaemon, &SyncDaemon{State: SyncBackup, Interface: "dummy0", SyncID: 7,
					MaxLen: 1400, Group: netip.MustParseAddr("239.1.2.3"), Port: 8900, TTL: 2})
			}, nil},
		{"--stop-daemon backup", func() (genetlink.Message, error) {
			return daemonRequest(cmdDelDaemon, &SyncDaemon{State: SyncBackup})
		}, map[uint16][]uint16{attrDaemon: {daemonState}}},
		{"--set 900 120 300", func() (genetlink.Message, error) {
			return timeoutsRequest(Timeouts{TCP: 900 * time.Second, TCPFin: 2 * time.Minute, UDP: 5 * time.Minute})
		}, nil},
		{"-Z", func() (genetlink.Message, error) { return message(cmdZero, nil), nil }, nil},
		{"-L --timeout", func() (genetlink.Message, error) { return message(cmdGetConfig, nil), nil }, nil},
		{"-L --daemon", func() (genetlink.Message, error) { return message(cmdGetDaemon, nil), nil }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.ipvsadm, func(t *testing.T) {
			want := c.request(t, tt.ipvsadm)
			if tt.keep != nil {
				want = keep(t, want, tt.keep)
			}
			m, err := tt.msg()
			if got := marshal(t, m, err); !bytes.Equal(got, want) {
				t.Errorf("got %x\nwant %x", got, want)
			}
		})
	}
}

func TestDecodeKernelReplies(t *testing.T) {
	c := readCapture(t)
	ip := netip.MustParseAddr

	// ipvsadm -Ln: the service dump, then one destination dump per service.
	var got []Service
	for _, m := range c.replies(t, "-Ln") {
		if m.Header.Command != cmdNewService {
			continue
		}
		s, err := serviceFromMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	want := []Service{
		{ServiceKey: AddrKey(SCTP, netip.MustParseAddrPort("192.0.2.2:9")), Scheduler: "rr", Flags: Persistent,
			Timeout: time.Minute, Netmask: 24, PersistenceEngine: "sip"},
		{ServiceKey: vs6, Scheduler: "wlc", Flags: Persistent, Timeout: 300 * time.Second, Netmask: 64},
		{ServiceKey: vs1, Scheduler: "wlc", Netmask: 32},
		{ServiceKey: MarkKey(IPv4, 7), Scheduler: "sh", Flags: SchedFlag1 | SchedFlag2, Netmask: 32},
		{ServiceKey: MarkKey(IPv6, 8), Scheduler: "mh", Flags: OnePacket, Netmask: 128},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("services:\n got %+v\nwant %+v", got, want)
	}

	var dests []Destination
	for _, m := range c.replies(t, "-Ln") {
		if m.Header.Command != cmdNewDest {
			continue
		}
		d, err := destFromMessage(m, IPv4)
		if err != nil {
			t.Fatal(err)
		}
		dests = append(dests, d)
	}
	// The kernel's dump gives every destination its counters (zero here).
	none := func() *DestCounters { return &DestCounters{} }
	wantDests := []Destination{
		{Addr: ip("192.0.2.13"), Port: 80, Forward: Tunnel, Weight: 1, TunnelType: 1, TunnelPort: 6080, Counters: none()},
		{Addr: ip("192.0.2.12"), Port: 8080, Forward: Masquerade, Weight: 0, Counters: none()},
		{Addr: ip("192.0.2.11"), Port: 80, Forward: Tunnel, Weight: 1, Counters: none()},
		{Addr: ip("192.0.2.10"), Port: 80, Forward: Route, Weight: 5, UpperThreshold: 100, LowerThreshold: 10, Counters: none()},
		{Addr: ip("2001:db8::10"), Port: 53, Forward: Route, Weight: 1, Counters: none()},
	}
	if !reflect.DeepEqual(dests, wantDests) {
		t.Errorf("destinations:\n got %+v\nwant %+v", dests, wantDests)
	}

	tm, err := timeoutsFromMessage(c.replies(t, "-L --timeout")[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := (Timeouts{TCP: 900 * time.Second, TCPFin: 120 * time.Second, UDP: 300 * time.Second}); tm != want {
		t.Errorf("timeouts %+v, want %+v", tm, want)
	}

	var ds []SyncDaemon
	for _, m := range c.replies(t, "-L --daemon") {
		d, err := daemonFromMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	wantDs := []SyncDaemon{
		// The kernel fills in its defaults.
		{State: SyncMaster, Interface: "dummy0", SyncID: 5, MaxLen: 1472, Group: ip("224.0.0.81"), Port: 8848, TTL: 1},
		{State: SyncBackup, Interface: "dummy0", SyncID: 7, MaxLen: 1400, Group: ip("239.1.2.3"), Port: 8900, TTL: 2},
	}
	if !reflect.DeepEqual(ds, wantDs) {
		t.Errorf("daemons:\n got %+v\nwant %+v", ds, wantDs)
	}
}

// TestDecodeAllocates holds the decoding of a kernel's reply to what it
// must keep: a service allocates nothing (its scheduler's name is
// interned), a destination only its counters. A resync decodes every
// service and destination of the table: with netlink.AttributeDecoder,
// which copies each attribute, a read of 1,000 x 10 made 532,000
// allocations (25 MB).
func TestDecodeAllocates(t *testing.T) {
	c := readCapture(t)
	var svc, dst genetlink.Message
	for _, m := range c.replies(t, "-Ln") {
		switch m.Header.Command {
		case cmdNewService:
			if s, _ := serviceFromMessage(m); s.Scheduler == "wlc" && s.PersistenceEngine == "" {
				svc = m
			}
		case cmdNewDest:
			dst = m
		}
	}
	if svc.Data == nil || dst.Data == nil {
		t.Fatal("the capture has no service or destination reply")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = serviceFromMessage(svc) }); n != 0 {
		t.Errorf("decoding a service allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = destFromMessage(dst, IPv4) }); n > 1 {
		t.Errorf("decoding a destination allocates %v times, want at most 1 (its counters)", n)
	}
}

func TestDecodeInfo(t *testing.T) {
	// IPVS_CMD_SET_INFO as the 6.1 kernel answers IPVS_CMD_GET_INFO
	// (from the capture: version 1.2.1, table size 4096).
	b, _ := hex.DecodeString("0e01000008000100010201000800020000100000")
	var m genetlink.Message
	if err := m.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	i, err := infoFromMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	if i.VersionString() != "1.2.1" || i.ConnTableSize != 4096 {
		t.Errorf("info %+v (%s)", i, i.VersionString())
	}
}

func TestEncodeRefusesWhatTheKernelWould(t *testing.T) {
	tests := []struct {
		name string
		op   Op
	}{
		{"no scheduler", Op{Kind: AddService, Service: Service{ServiceKey: vs1}}},
		{"long scheduler", Op{Kind: AddService, Service: Service{ServiceKey: vs1, Scheduler: "a-very-long-scheduler"}}},
		{"netmask", Op{Kind: AddService, Service: Service{ServiceKey: vs1, Scheduler: "rr", Netmask: 33}}},
		{"family", Op{Kind: AddService, Service: Service{ServiceKey: ServiceKey{Family: IPv6, Protocol: TCP,
			Addr: netip.MustParseAddr("192.0.2.1"), Port: 80}, Scheduler: "rr"}}},
		{"no protocol", Op{Kind: DelService, Service: Service{ServiceKey: ServiceKey{Family: IPv4,
			Addr: netip.MustParseAddr("192.0.2.1"), Port: 80}}}},
		{"no destination", Op{Kind: AddDest, Service: Service{ServiceKey: vs1}}},
		{"negative weight", Op{Kind: AddDest, Service: Service{ServiceKey: vs1},
			Dest: Destination{Addr: netip.MustParseAddr("192.0.2.9"), Weight: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.op.message(); err == nil {
				t.Errorf("%s: no error", tt.op)
			}
		})
	}
}
