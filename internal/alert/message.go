package alert

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/directord/directord/config"
)

// Message is one alert: its subject, router_id included, and its body.
type Message struct {
	Subject string
	Body    string
}

// Instance is keepalived's alert for VRRP instance name entering state
// (MASTER, BACKUP, FAULT, STOP or DELETED); false for another state,
// which keepalived does not mail.
func Instance(routerID, name, state string) (Message, bool) {
	var subj, body string
	switch state {
	case "MASTER":
		subj, body = "Entering MASTER state", "=> VRRP Instance is now owning VRRP VIPs <="
	case "BACKUP":
		subj, body = "Entering BACKUP state", "=> VRRP Instance is no longer owning VRRP VIPs <="
	case "FAULT":
		subj, body = "Entering FAULT state", "=> VRRP Instance is no longer owning VRRP VIPs <="
	case "STOP":
		subj, body = "Stopping", "=> VRRP Instance stopping <="
	case "DELETED":
		subj, body = "Deleted", "=> VRRP Deleted at reload <="
	default:
		return Message{}, false
	}
	return Message{Subject: fmt.Sprintf("[%s] VRRP Instance %s - %s", routerID, name, subj), Body: body}, true
}

// Group is keepalived's alert for sync group name entering state, when
// all its members have; false for a state keepalived does not mail.
func Group(routerID, name, state string) (Message, bool) {
	var subj, body string
	switch state {
	case "MASTER":
		subj, body = "Entering MASTER state", "=> All VRRP group instances are now in MASTER state <="
	case "BACKUP":
		subj, body = "Entering BACKUP state", "=> All VRRP group instances are now in BACKUP state <="
	case "FAULT":
		subj, body = "Entering FAULT state", "=> All VRRP group instances are now in FAULT state <="
	case "STOP":
		subj, body = "Stopping", "=> All VRRP group instances are now stopping <="
	default:
		return Message{}, false
	}
	return Message{Subject: fmt.Sprintf("[%s] VRRP Group %s - %s", routerID, name, subj), Body: body}, true
}

// RealServer is keepalived's alert for a real server whose checks took it
// up or down. keepalived's body names the checker that decided; directord
// mails the real server's transition, with the body of its first
// checker's kind.
func RealServer(routerID string, vs *config.VirtualServer, rs *config.RealServer, up bool) Message {
	kind := config.CheckerUnset
	if len(rs.Checkers) > 0 {
		kind = rs.Checkers[0].Type
	}
	var body string
	switch {
	case kind == config.CheckTCP && up:
		body = "=> TCP CHECK succeed on service <="
	case kind == config.CheckTCP:
		body = "=> TCP CHECK failed on service <="
	case kind == config.CheckMisc && up:
		body = "=> MISC CHECK succeeded on service <="
	case kind == config.CheckMisc:
		body = "=> MISC CHECK failed on service <="
	case up:
		body = "=> CHECK succeed on service <="
	default:
		body = "=> CHECK failed on service : HTTP request failed <="
	}
	return Message{
		Subject: fmt.Sprintf("[%s] Realserver %s of virtual server %s - %s", routerID, trio(rs.Addr, vs.Protocol), FormatVS(vs), upDown(up)),
		Body:    body,
	}
}

// Quorum is keepalived's alert for virtual server vs gaining (up) or
// losing its quorum; start says it is the first state after start-up.
// weightSum is the live real servers' weight sum.
func Quorum(routerID string, vs *config.VirtualServer, up, start bool, weightSum int64) Message {
	what := "Lost quorum"
	switch {
	case up && start:
		what = "Starting with quorum up"
	case up:
		what = "Gained quorum"
	case start:
		what = "Starting with quorum down"
	}
	threshold := int64(vs.Quorum) - int64(vs.Hysteresis)
	return Message{
		Subject: fmt.Sprintf("[%s] Virtualserver %s - %s", routerID, FormatVS(vs), upDown(up)),
		Body:    fmt.Sprintf("=> %s %d+%d=%d <= %d <=", what, vs.Quorum, vs.Hysteresis, threshold, weightSum),
	}
}

// Shutdown is keepalived's alert at stop, sent for a virtual server
// with omega: for each of its live real servers (rs), then for the
// virtual server itself (rs nil).
func Shutdown(routerID string, vs *config.VirtualServer, rs *config.RealServer) Message {
	if rs != nil {
		return Message{
			Subject: fmt.Sprintf("[%s] Realserver %s of virtual server %s - DOWN", routerID, trio(rs.Addr, vs.Protocol), FormatVS(vs)),
			Body:    "=> Shutting down <=",
		}
	}
	return Message{Subject: fmt.Sprintf("[%s] Virtualserver %s - DOWN", routerID, FormatVS(vs)), Body: "=> Shutting down <="}
}

func upDown(up bool) string {
	if up {
		return "UP"
	}
	return "DOWN"
}

// FormatVS is keepalived's name of a virtual server in alerts (format_vs):
// [GROUP]:PORT, FWM MARK or [ADDRESS]:PROTO:PORT.
func FormatVS(vs *config.VirtualServer) string {
	switch {
	case vs.Group != "":
		return fmt.Sprintf("[%s]:%d", vs.Group, vs.Addr.Port())
	case vs.FWMark != 0:
		return "FWM " + strconv.FormatUint(uint64(vs.FWMark), 10)
	}
	return trio(vs.Addr, vs.Protocol)
}

// trio is keepalived's inet_sockaddrtotrio: [ADDRESS]:PROTO:PORT.
func trio(a netip.AddrPort, proto config.Protocol) string {
	p := "none"
	switch proto {
	case config.TCP:
		p = "tcp"
	case config.UDP:
		p = "udp"
	case config.SCTP:
		p = "sctp"
	}
	return fmt.Sprintf("[%s]:%s:%d", a.Addr().Unmap(), p, a.Port())
}
