package director

import (
	"os"
	"strings"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
)

// Sysctls reads and writes the kernel's IPVS settings, net.ipv4.vs.NAME;
// the default is /proc/sys/net/ipv4/vs, tests use a map.
type Sysctls interface {
	Sysctl(name string) (string, error)
	SetSysctl(name, value string) error
}

// procSysctls are the settings of directord's network namespace.
type procSysctls struct{}

const ipvsSysctlDir = "/proc/sys/net/ipv4/vs/"

func (procSysctls) Sysctl(name string) (string, error) {
	b, err := os.ReadFile(ipvsSysctlDir + name)
	return strings.TrimSpace(string(b)), err
}

func (procSysctls) SetSysctl(name, value string) error {
	return os.WriteFile(ipvsSysctlDir+name, []byte(value), 0o644)
}

// reorder is one service whose destinations a sync moved.
type reorder struct {
	key   ipvs.ServiceKey
	moved int
}

// reordered are the services whose destinations ops moved, each deleted
// and added again at once (ipvs.Diff's repair of a Maglev service's
// order), in the order of ops.
func reordered(ops []ipvs.Op) []reorder {
	var out []reorder
	for i := 0; i+1 < len(ops); i++ {
		d, a := &ops[i], &ops[i+1]
		if d.Kind != ipvs.DelDest || a.Kind != ipvs.AddDest || d.Service.ServiceKey != a.Service.ServiceKey || d.Dest.Key() != a.Dest.Key() {
			continue
		}
		if n := len(out); n > 0 && out[n-1].key == d.Service.ServiceKey {
			out[n-1].moved++
		} else {
			out = append(out, reorder{key: d.Service.ServiceKey, moved: 1})
		}
		i++
	}
	return out
}

// sloppySysctls are the settings that make IPVS schedule a connection
// from any packet, not its first only: sloppy_tcp (a TCP packet without
// SYN) and sloppy_sctp (an SCTP packet without INIT). A director behind
// ECMP gets the middle of flows another director started (a router that
// lost or regained a next hop re-hashes them); without these it drops
// them, with them it sends each to the real server the (mh) table gives.
var sloppySysctls = []string{"sloppy_tcp", "sloppy_sctp"}

// sloppyHeld is what directord knows of one sloppy setting.
type sloppyHeld struct {
	// Own: directord set it to 1 and will put Orig back.
	Own  bool
	Orig string
	// Err is the last error logged for it, to log each once.
	Err string
}

// sloppyAction is what sloppyStep decides for one setting.
type sloppyAction struct {
	// Write is the value to write, or "" for none.
	Write string
	// Conflict: the setting was 1 by directord's hand and someone (an
	// operator, sysctl --system) set it back while a service is
	// announced by BGP; directord sets it again and warns.
	Conflict bool
	// Held is the setting's state once Write is done.
	Held sloppyHeld
}

// sloppyStep decides a sloppy setting whose value is cur, held as h, for
// a configuration that announces (announced) or does not announce any
// virtual server by BGP. It is pure.
//
// While a virtual server is announced the setting must be 1: directord
// writes 1 when it is not, and owns it then (to put the value it found
// back later); one the operator set to 1 already is left theirs. Once no
// virtual server is announced (a reload, the stop), a setting directord
// owns gets its value back, unless someone changed it since, whose value
// stands.
func sloppyStep(announced bool, cur string, h sloppyHeld) sloppyAction {
	switch {
	case announced && cur == "1":
		return sloppyAction{Held: h}
	case announced:
		orig := cur
		if h.Own {
			orig = h.Orig
		}
		return sloppyAction{Write: "1", Conflict: h.Own, Held: sloppyHeld{Own: true, Orig: orig, Err: h.Err}}
	case h.Own && cur == "1":
		return sloppyAction{Write: h.Orig, Held: sloppyHeld{Err: h.Err}}
	case h.Own:
		return sloppyAction{Held: sloppyHeld{Err: h.Err}}
	}
	return sloppyAction{Held: h}
}

// announces tells whether any virtual server of the LVS's configuration
// is announced by BGP.
func (l *LVS) announces() bool {
	for _, vs := range l.cfg.VirtualServers {
		if vs.Announce != nil {
			return true
		}
	}
	return false
}

// sloppyNeeded is the sloppy setting an announced virtual server needs
// before it may be announced: sloppy_sctp for SCTP, none for UDP (IPVS
// schedules a UDP flow from any datagram), sloppy_tcp for TCP and for a
// fwmark service, which takes TCP too.
func sloppyNeeded(vs *config.VirtualServer) string {
	switch {
	case vs.Announce == nil:
		return ""
	case vs.Protocol == config.SCTP:
		return "sloppy_sctp"
	case vs.Protocol == config.UDP:
		return ""
	}
	return "sloppy_tcp"
}

// sloppyReady reports whether the sloppy setting vs needs is 1 as the
// last applySloppy left it: until then the virtual server is not served
// as BGP needs (the flows another director started would be dropped, or
// reset by this director's own stack), and it is not announced.
func (l *LVS) sloppyReady(vs *config.VirtualServer) bool {
	name := sloppyNeeded(vs)
	return name == "" || l.sloppyOn[name]
}

// applySloppy brings the sloppy settings where sloppyStep puts them, for
// announced. It runs after each full sync (the start, every resync, a
// reload) and at the stop; the kernel creates the settings with the ip_vs
// module, which the first sync loads.
func (l *LVS) applySloppy(announced bool) {
	if l.sloppy == nil {
		l.sloppy = map[string]sloppyHeld{}
		l.sloppyOn = map[string]bool{}
	}
	for _, name := range sloppySysctls {
		h := l.sloppy[name]
		l.sloppyOn[name] = false
		logErr := func(op string, err error) {
			if err.Error() != h.Err {
				h.Err = err.Error()
				l.log.Warn("ipvs: "+op+" net.ipv4.vs."+name, "err", err)
			}
			l.sloppy[name] = h
		}
		cur, err := l.Sysctls.Sysctl(name)
		if err != nil {
			if announced || h.Own {
				logErr("read", err)
			}
			continue
		}
		a := sloppyStep(announced, cur, h)
		if a.Write != "" {
			if err := l.Sysctls.SetSysctl(name, a.Write); err != nil {
				logErr("write", err)
				continue
			}
			switch {
			case a.Conflict:
				l.log.Warn("ipvs: net.ipv4.vs."+name+" was set back to "+cur+" while a virtual server is announced by BGP; setting it to 1 again, as flows another director started would be dropped",
					"sysctl", "net.ipv4.vs."+name)
			case a.Write == "1":
				l.log.Info("ipvs: net.ipv4.vs."+name+" set to 1 while a virtual server is announced by BGP", "was", cur)
			default:
				l.log.Info("ipvs: net.ipv4.vs."+name+" put back, no virtual server being announced by BGP", "value", a.Write)
			}
		}
		a.Held.Err = ""
		l.sloppy[name] = a.Held
		l.sloppyOn[name] = cur == "1" || a.Write == "1"
	}
}

// sloppyMissing reports whether a virtual server waits for its sloppy
// setting (sloppyReady) to be announced.
func (l *LVS) sloppyMissing() bool {
	for _, p := range l.pools {
		if !l.sloppyReady(p.VS) {
			return true
		}
	}
	return false
}
