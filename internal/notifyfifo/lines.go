package notifyfifo

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/directord/directord/config"
)

// The lines, as keepalived 2.2.7 writes them (vrrp_notify.c's
// notify_fifo, ipwrapper.c's notify_fifo_vs and notify_fifo_rs).

// InstanceLine is a VRRP instance's event: `INSTANCE "VI_1" MASTER 100`,
// state one of MASTER, BACKUP, FAULT, STOP, DELETED, prio its effective
// priority.
func InstanceLine(name, state string, prio int) string {
	return `INSTANCE "` + name + `" ` + state + " " + strconv.Itoa(prio) + "\n"
}

// GroupLine is a sync group's event: `GROUP "G" MASTER 0` (a group's
// priority is always 0).
func GroupLine(name, state string) string {
	return `GROUP "` + name + `" ` + state + " 0\n"
}

// VSLine is a virtual server's quorum event: `VS [10.0.0.1]:tcp:80 UP`.
func VSLine(vs *config.VirtualServer, up bool) string {
	return "VS " + FormatVS(vs) + " " + upDown(up) + "\n"
}

// RSLine is a real server's event: `RS [10.0.0.2]:tcp:80
// [10.0.0.1]:tcp:80 DOWN`.
func RSLine(vs *config.VirtualServer, rs *config.RealServer, up bool) string {
	return "RS " + trio(rs.Addr, vs.Protocol) + " " + FormatVS(vs) + " " + upDown(up) + "\n"
}

func upDown(up bool) string {
	if up {
		return "UP"
	}
	return "DOWN"
}

// FormatVS is keepalived's format_vs: "[ADDR]:PROTO:PORT", "FWM MARK", or
// for a virtual server group "[NAME]:0" (keepalived prints the port of
// the virtual server's own address, which a group's has not).
func FormatVS(vs *config.VirtualServer) string {
	switch {
	case vs.Group != "":
		return "[" + vs.Group + "]:0"
	case vs.FWMark != 0:
		return "FWM " + strconv.FormatUint(uint64(vs.FWMark), 10)
	}
	return trio(vs.Addr, vs.Protocol)
}

// trio is keepalived's inet_sockaddrtotrio: a fwmark service has no
// protocol ("none").
func trio(a netip.AddrPort, proto config.Protocol) string {
	p := strings.ToLower(proto.String())
	if p == "" {
		p = "none"
	}
	return "[" + a.Addr().String() + "]:" + p + ":" + strconv.Itoa(int(a.Port()))
}
