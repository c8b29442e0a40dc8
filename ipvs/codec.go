package ipvs

// The IPVS generic netlink messages: what the kernel's ip_vs_ctl.c takes
// and gives (linux/ip_vs.h). Encoding follows ipvsadm's libipvs attribute
// for attribute, so that a message of ours is byte for byte one that
// ipvsadm sends; tests hold both.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

const (
	familyName    = "IPVS"
	familyVersion = 1
)

// Commands (IPVS_CMD_*).
const (
	cmdNewService = 1
	cmdSetService = 2
	cmdDelService = 3
	cmdGetService = 4
	cmdNewDest    = 5
	cmdSetDest    = 6
	cmdDelDest    = 7
	cmdGetDest    = 8
	cmdNewDaemon  = 9
	cmdDelDaemon  = 10
	cmdGetDaemon  = 11
	cmdSetConfig  = 12
	cmdGetConfig  = 13
	cmdGetInfo    = 15
	cmdZero       = 16
	cmdFlush      = 17
)

// First-level attributes (IPVS_CMD_ATTR_*).
const (
	attrService    = 1
	attrDest       = 2
	attrDaemon     = 3
	attrTimeoutTCP = 4
	attrTimeoutFin = 5
	attrTimeoutUDP = 6
)

// Service attributes (IPVS_SVC_ATTR_*).
const (
	svcAF       = 1
	svcProtocol = 2
	svcAddr     = 3
	svcPort     = 4
	svcFWMark   = 5
	svcSched    = 6
	svcFlags    = 7
	svcTimeout  = 8
	svcNetmask  = 9
	svcStats    = 10
	svcPEName   = 11
	svcStats64  = 12
)

// Destination attributes (IPVS_DEST_ATTR_*).
const (
	destAddr         = 1
	destPort         = 2
	destFwdMethod    = 3
	destWeight       = 4
	destUThresh      = 5
	destLThresh      = 6
	destActiveConns  = 7
	destInactConns   = 8
	destPersistConns = 9
	destStats        = 10
	destAddrFamily   = 11
	destStats64      = 12
	destTunType      = 13
	destTunPort      = 14
	destTunFlags     = 15
)

// Sync daemon attributes (IPVS_DAEMON_ATTR_*).
const (
	daemonState    = 1
	daemonIfName   = 2
	daemonSyncID   = 3
	daemonMaxLen   = 4
	daemonGroup    = 5
	daemonGroup6   = 6
	daemonPort     = 7
	daemonTTL      = 8
	maxNameLen     = 16 // IP_VS_SCHEDNAME_MAXLEN, IP_VS_IFNAME_MAXLEN, ...
	inetAddrLength = 16 // sizeof(union nf_inet_addr)
)

// Statistics attributes (IPVS_STATS_ATTR_*).
const (
	statsConns    = 1
	statsInPkts   = 2
	statsOutPkts  = 3
	statsInBytes  = 4
	statsOutBytes = 5
	statsCPS      = 6
	statsInPPS    = 7
	statsOutPPS   = 8
	statsInBPS    = 9
	statsOutBPS   = 10
)

// Info attributes (IPVS_INFO_ATTR_*).
const (
	infoVersion     = 1
	infoConnTabSize = 2
)

func message(cmd uint8, data []byte) genetlink.Message {
	return genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: familyVersion},
		Data:   data,
	}
}

// encode runs fn on a fresh encoder and returns its bytes.
func encode(fn func(ae *netlink.AttributeEncoder)) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	return ae.Encode()
}

// inetAddr is an address as the kernel's union nf_inet_addr: 16 bytes,
// an IPv4 address in the first 4.
func inetAddr(a netip.Addr) []byte {
	b := make([]byte, inetAddrLength)
	if a.Is4() || a.Is4In6() {
		v := a.Unmap().As4()
		copy(b, v[:])
	} else {
		v := a.As16()
		copy(b, v[:])
	}
	return b
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// netmask is the persistence netmask attribute: for IPv4 the mask itself,
// in network byte order; for IPv6 the prefix length as a native u32
// (ip_vs_ctl.c reads it as such).
func netmask(f Family, bits int) []byte {
	if f == IPv6 {
		if bits == 0 {
			bits = 128
		}
		return binary.NativeEndian.AppendUint32(nil, uint32(bits))
	}
	if bits == 0 {
		bits = 32
	}
	return binary.BigEndian.AppendUint32(nil, ^uint32(0)<<(32-bits))
}

// validate checks what the kernel would refuse with a bare EINVAL, so the
// error can say what is wrong.
func (s *Service) validate(full bool) error {
	k := s.ServiceKey
	if k.Family != IPv4 && k.Family != IPv6 {
		return fmt.Errorf("address family %s", k.Family)
	}
	if k.FWMark == 0 {
		if !k.Addr.IsValid() {
			return errors.New("no address")
		}
		if FamilyOf(k.Addr) != k.Family {
			return fmt.Errorf("address %s is not %s", k.Addr, k.Family)
		}
		if k.Protocol == 0 {
			return errors.New("no protocol")
		}
	}
	if !full {
		return nil
	}
	if s.Scheduler == "" || len(s.Scheduler) >= maxNameLen {
		return fmt.Errorf("scheduler %q", s.Scheduler)
	}
	if len(s.PersistenceEngine) >= maxNameLen {
		return fmt.Errorf("persistence engine %q", s.PersistenceEngine)
	}
	max := 32
	if k.Family == IPv6 {
		max = 128
	}
	if s.Netmask < 0 || s.Netmask > max {
		return fmt.Errorf("netmask /%d", s.Netmask)
	}
	if s.Timeout < 0 || s.Timeout > time.Duration(1<<32-1)*time.Second {
		return fmt.Errorf("timeout %s", s.Timeout)
	}
	return nil
}

// serviceAttrs writes the nested service attribute; full adds the options
// a new or changed service needs.
func serviceAttrs(ae *netlink.AttributeEncoder, s *Service, full bool) {
	ae.Nested(attrService, func(ae *netlink.AttributeEncoder) error {
		ae.Uint16(svcAF, uint16(s.Family))
		if s.FWMark != 0 {
			ae.Uint32(svcFWMark, s.FWMark)
		} else {
			ae.Uint16(svcProtocol, uint16(s.Protocol))
			ae.Bytes(svcAddr, inetAddr(s.Addr))
			ae.Bytes(svcPort, be16(s.Port))
		}
		if !full {
			return nil
		}
		ae.String(svcSched, s.Scheduler)
		if s.PersistenceEngine != "" {
			ae.String(svcPEName, s.PersistenceEngine)
		}
		// struct ip_vs_flags: the flags and the mask of those to set.
		f := binary.NativeEndian.AppendUint32(nil, uint32(s.Flags&userFlags))
		f = binary.NativeEndian.AppendUint32(f, ^uint32(0))
		ae.Bytes(svcFlags, f)
		ae.Uint32(svcTimeout, uint32(s.Timeout/time.Second))
		ae.Bytes(svcNetmask, netmask(s.Family, s.Netmask))
		return nil
	})
}

func (d *Destination) validate() error {
	if !d.Addr.IsValid() {
		return errors.New("no address")
	}
	if d.Weight < 0 {
		return fmt.Errorf("weight %d", d.Weight)
	}
	if d.Forward > Bypass {
		return fmt.Errorf("forwarding method %s", d.Forward)
	}
	return nil
}

// destAttrs writes the nested destination attribute; full adds the
// options a new or changed destination needs. The order is ipvsadm's.
func destAttrs(ae *netlink.AttributeEncoder, d *Destination, full bool) {
	ae.Nested(attrDest, func(ae *netlink.AttributeEncoder) error {
		ae.Uint16(destAddrFamily, uint16(FamilyOf(d.Addr)))
		ae.Bytes(destAddr, inetAddr(d.Addr))
		ae.Bytes(destPort, be16(d.Port))
		if !full {
			return nil
		}
		ae.Uint32(destFwdMethod, uint32(d.Forward))
		ae.Uint32(destWeight, uint32(d.Weight))
		ae.Uint8(destTunType, d.TunnelType)
		ae.Bytes(destTunPort, be16(d.TunnelPort))
		ae.Uint16(destTunFlags, d.TunnelFlags)
		ae.Uint32(destUThresh, d.UpperThreshold)
		ae.Uint32(destLThresh, d.LowerThreshold)
		return nil
	})
}

func daemonAttrs(ae *netlink.AttributeEncoder, d *SyncDaemon, full bool) {
	ae.Nested(attrDaemon, func(ae *netlink.AttributeEncoder) error {
		ae.Uint32(daemonState, uint32(d.State))
		if !full {
			return nil
		}
		ae.String(daemonIfName, d.Interface)
		ae.Uint32(daemonSyncID, uint32(d.SyncID))
		if d.MaxLen != 0 {
			ae.Uint16(daemonMaxLen, d.MaxLen)
		}
		if d.Port != 0 {
			ae.Uint16(daemonPort, d.Port)
		}
		if d.TTL != 0 {
			ae.Uint8(daemonTTL, d.TTL)
		}
		if d.Group.IsValid() {
			if d.Group.Is4() {
				v := d.Group.As4()
				ae.Bytes(daemonGroup, v[:])
			} else {
				v := d.Group.As16()
				ae.Bytes(daemonGroup6, v[:])
			}
		}
		return nil
	})
}

func (d *SyncDaemon) validate() error {
	if d.State != SyncMaster && d.State != SyncBackup {
		return fmt.Errorf("state %s", d.State)
	}
	if d.Interface == "" || len(d.Interface) >= maxNameLen {
		return fmt.Errorf("interface %q", d.Interface)
	}
	if d.Group.IsValid() && !d.Group.IsMulticast() {
		return fmt.Errorf("group %s is not multicast", d.Group)
	}
	return nil
}

// The requests, as pure functions of their arguments.

func serviceRequest(cmd uint8, s *Service) (genetlink.Message, error) {
	full := cmd == cmdNewService || cmd == cmdSetService
	if err := s.validate(full); err != nil {
		return genetlink.Message{}, err
	}
	b, err := encode(func(ae *netlink.AttributeEncoder) { serviceAttrs(ae, s, full) })
	return message(cmd, b), err
}

func destRequest(cmd uint8, s ServiceKey, d *Destination) (genetlink.Message, error) {
	svc := Service{ServiceKey: s}
	if err := svc.validate(false); err != nil {
		return genetlink.Message{}, err
	}
	if err := d.validate(); err != nil {
		return genetlink.Message{}, err
	}
	full := cmd == cmdNewDest || cmd == cmdSetDest
	b, err := encode(func(ae *netlink.AttributeEncoder) {
		serviceAttrs(ae, &svc, false)
		destAttrs(ae, d, full)
	})
	return message(cmd, b), err
}

func daemonRequest(cmd uint8, d *SyncDaemon) (genetlink.Message, error) {
	full := cmd == cmdNewDaemon
	if full {
		if err := d.validate(); err != nil {
			return genetlink.Message{}, err
		}
	}
	b, err := encode(func(ae *netlink.AttributeEncoder) { daemonAttrs(ae, d, full) })
	return message(cmd, b), err
}

func timeoutsRequest(t Timeouts) (genetlink.Message, error) {
	b, err := encode(func(ae *netlink.AttributeEncoder) {
		for _, v := range []struct {
			typ uint16
			d   time.Duration
		}{{attrTimeoutTCP, t.TCP}, {attrTimeoutFin, t.TCPFin}, {attrTimeoutUDP, t.UDP}} {
			if v.d > 0 {
				ae.Uint32(v.typ, uint32((v.d+time.Second-1)/time.Second))
			}
		}
	})
	return message(cmdSetConfig, b), err
}

// Decoding. The kernel is trusted no further than its lengths: every
// attribute is checked, unknown ones are skipped (newer kernels add them).

var errShort = errors.New("attribute has the wrong length")

// nested calls fn with a reader of each first-level attribute typ of a
// message, as there should be one; it is an error if there is none.
func nested(data []byte, typ uint16, fn func(ad *attrs) error) error {
	ad, err := newAttrs(data)
	if err != nil {
		return err
	}
	found := false
	for ad.next() {
		if ad.typ() != typ {
			continue
		}
		found = true
		if in, ok := ad.nested(); ok {
			ad.fail(cmpErr(fn(&in), in.err()))
		}
	}
	if err := ad.err(); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no attribute %d in the message", typ)
	}
	return nil
}

// cmpErr is the first of two errors that is not nil.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func addrOf(f Family, b []byte) (netip.Addr, error) {
	switch {
	case f == IPv4 && len(b) >= 4:
		return netip.AddrFrom4([4]byte(b[:4])), nil
	case f == IPv6 && len(b) >= 16:
		return netip.AddrFrom16([16]byte(b[:16])), nil
	}
	return netip.Addr{}, fmt.Errorf("%s address of %d bytes", f, len(b))
}

// port is a port in network byte order.
func port(ad *attrs) uint16 {
	if b := ad.data(); len(b) == 2 {
		return binary.BigEndian.Uint16(b)
	}
	ad.fail(errShort)
	return 0
}

func decodeService(ad *attrs) (Service, error) {
	var s Service
	var addr, mask []byte
	for ad.next() {
		switch ad.typ() {
		case svcAF:
			s.Family = Family(ad.uint16())
		case svcProtocol:
			s.Protocol = Protocol(ad.uint16())
		case svcAddr:
			addr = ad.data()
		case svcPort:
			s.Port = port(ad)
		case svcFWMark:
			s.FWMark = ad.uint32()
		case svcSched:
			s.Scheduler = ad.string()
		case svcPEName:
			s.PersistenceEngine = ad.string()
		case svcFlags:
			// struct ip_vs_flags: the flags, then the mask.
			if b := ad.data(); len(b) == 8 {
				s.Flags = ServiceFlags(binary.NativeEndian.Uint32(b)) &^ Hashed
			} else {
				ad.fail(errShort)
			}
		case svcTimeout:
			s.Timeout = time.Duration(ad.uint32()) * time.Second
		case svcNetmask:
			mask = ad.data()
		case svcStats64:
			readStats(ad, true, &s.Stats)
		case svcStats:
			readStats(ad, false, &s.Stats)
		}
	}
	if err := ad.err(); err != nil {
		return s, err
	}
	if s.Family != IPv4 && s.Family != IPv6 {
		return s, fmt.Errorf("service of address family %s", s.Family)
	}
	if s.FWMark != 0 {
		// The kernel stores TCP for a fwmark service; the key has none.
		s.Protocol, s.Port = 0, 0
	} else {
		a, err := addrOf(s.Family, addr)
		if err != nil {
			return s, err
		}
		s.Addr = a
	}
	if len(mask) == 4 {
		if s.Family == IPv6 {
			s.Netmask = int(binary.NativeEndian.Uint32(mask))
		} else {
			s.Netmask = bits.LeadingZeros32(^binary.BigEndian.Uint32(mask))
		}
	}
	return s, nil
}

func decodeDest(ad *attrs, f Family) (Destination, error) {
	var d Destination
	var c DestCounters
	counted := false
	var addr []byte
	for ad.next() {
		switch ad.typ() {
		case destAddr:
			addr = ad.data()
		case destPort:
			d.Port = port(ad)
		case destFwdMethod:
			d.Forward = Forward(ad.uint32())
		case destWeight:
			d.Weight = int32(ad.uint32())
		case destUThresh:
			d.UpperThreshold = ad.uint32()
		case destLThresh:
			d.LowerThreshold = ad.uint32()
		case destActiveConns:
			c.ActiveConns, counted = ad.uint32(), true
		case destInactConns:
			c.InactiveConns, counted = ad.uint32(), true
		case destPersistConns:
			c.PersistConns, counted = ad.uint32(), true
		case destAddrFamily:
			f = Family(ad.uint16())
		case destTunType:
			d.TunnelType = ad.uint8()
		case destTunPort:
			d.TunnelPort = port(ad)
		case destTunFlags:
			d.TunnelFlags = ad.uint16()
		case destStats64:
			readStats(ad, true, &c.Stats)
			counted = true
		case destStats:
			readStats(ad, false, &c.Stats)
			counted = true
		}
	}
	if err := ad.err(); err != nil {
		return d, err
	}
	if counted {
		d.Counters = &c
	}
	a, err := addrOf(f, addr)
	d.Addr = a
	return d, err
}

// readStats reads a nested statistics attribute into st: the 64-bit one
// (wide), or the old one if no 64-bit one came first.
func readStats(ad *attrs, wide bool, st *Stats) {
	if !wide && *st != (Stats{}) {
		return
	}
	if in, ok := ad.nested(); ok {
		*st = decodeStats(&in, wide)
		ad.fail(in.err())
	}
}

func decodeStats(ad *attrs, wide bool) Stats {
	var s Stats
	for ad.next() {
		var p *uint64
		switch ad.typ() {
		case statsConns:
			p = &s.Connections
		case statsInPkts:
			p = &s.PacketsIn
		case statsOutPkts:
			p = &s.PacketsOut
		case statsInBytes:
			p = &s.BytesIn
		case statsOutBytes:
			p = &s.BytesOut
		case statsCPS:
			p = &s.CPS
		case statsInPPS:
			p = &s.PPSIn
		case statsOutPPS:
			p = &s.PPSOut
		case statsInBPS:
			p = &s.BPSIn
		case statsOutBPS:
			p = &s.BPSOut
		default:
			continue // IPVS_STATS_ATTR_PAD and newer ones
		}
		// The old stats are 32-bit but for the byte counters.
		if wide || ad.typ() == statsInBytes || ad.typ() == statsOutBytes {
			*p = ad.uint64()
		} else {
			*p = uint64(ad.uint32())
		}
	}
	return s
}

func decodeDaemon(ad *attrs) (SyncDaemon, error) {
	var d SyncDaemon
	for ad.next() {
		switch ad.typ() {
		case daemonState:
			d.State = SyncState(ad.uint32())
		case daemonIfName:
			d.Interface = ad.string()
		case daemonSyncID:
			d.SyncID = uint8(ad.uint32())
		case daemonMaxLen:
			d.MaxLen = ad.uint16()
		case daemonGroup:
			if b := ad.data(); len(b) == 4 {
				d.Group = netip.AddrFrom4([4]byte(b))
			} else {
				ad.fail(errShort)
			}
		case daemonGroup6:
			if b := ad.data(); len(b) == 16 {
				d.Group = netip.AddrFrom16([16]byte(b))
			} else {
				ad.fail(errShort)
			}
		case daemonPort:
			d.Port = ad.uint16()
		case daemonTTL:
			d.TTL = ad.uint8()
		}
	}
	return d, ad.err()
}

// serviceFromMessage decodes a service in a reply to
// IPVS_CMD_GET_SERVICE. It and destFromMessage are written out rather
// than passed a closure, which would escape to the heap with what it
// captures: they run once a service or destination of every read.
func serviceFromMessage(m genetlink.Message) (Service, error) {
	var s Service
	ad, err := newAttrs(m.Data)
	if err != nil {
		return s, err
	}
	found := false
	for ad.next() {
		if ad.typ() != attrService {
			continue
		}
		found = true
		if in, ok := ad.nested(); ok {
			var err error
			s, err = decodeService(&in)
			ad.fail(cmpErr(err, in.err()))
		}
	}
	if err := ad.err(); err != nil {
		return s, err
	}
	if !found {
		return s, fmt.Errorf("no attribute %d in the message", attrService)
	}
	return s, nil
}

func destFromMessage(m genetlink.Message, f Family) (Destination, error) {
	var d Destination
	ad, err := newAttrs(m.Data)
	if err != nil {
		return d, err
	}
	found := false
	for ad.next() {
		if ad.typ() != attrDest {
			continue
		}
		found = true
		if in, ok := ad.nested(); ok {
			var err error
			d, err = decodeDest(&in, f)
			ad.fail(cmpErr(err, in.err()))
		}
	}
	if err := ad.err(); err != nil {
		return d, err
	}
	if !found {
		return d, fmt.Errorf("no attribute %d in the message", attrDest)
	}
	return d, nil
}

func daemonFromMessage(m genetlink.Message) (SyncDaemon, error) {
	var d SyncDaemon
	err := nested(m.Data, attrDaemon, func(ad *attrs) error {
		var err error
		d, err = decodeDaemon(ad)
		return err
	})
	return d, err
}

func timeoutsFromMessage(m genetlink.Message) (Timeouts, error) {
	var t Timeouts
	ad, err := newAttrs(m.Data)
	if err != nil {
		return t, err
	}
	for ad.next() {
		switch ad.typ() {
		case attrTimeoutTCP:
			t.TCP = time.Duration(ad.uint32()) * time.Second
		case attrTimeoutFin:
			t.TCPFin = time.Duration(ad.uint32()) * time.Second
		case attrTimeoutUDP:
			t.UDP = time.Duration(ad.uint32()) * time.Second
		}
	}
	return t, ad.err()
}

func infoFromMessage(m genetlink.Message) (Info, error) {
	var i Info
	ad, err := newAttrs(m.Data)
	if err != nil {
		return i, err
	}
	for ad.next() {
		switch ad.typ() {
		case infoVersion:
			i.Version = ad.uint32()
		case infoConnTabSize:
			i.ConnTableSize = ad.uint32()
		}
	}
	return i, ad.err()
}
