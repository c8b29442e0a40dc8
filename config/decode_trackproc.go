package config

import (
	"strconv"
	"strings"
	"time"
)

// vrrp_track_process: the top-level block and the instance's and sync
// group's track_process { } lists, read as keepalived 2.2.7's
// vrrp_parser.c (vrrp_tprocess_*_handler) and vrrp_track.c
// (alloc_track_process) read them.

// commLen is the longest process name the kernel keeps (TASK_COMM_LEN 16,
// its NUL included).
const commLen = 15

func init() {
	topBlock.keys["vrrp_track_process"] = func(d *decoder, n *Node, c *Config) { d.trackProcess(n, c) }
	instanceBlock.keys["track_process"] = func(d *decoder, n *Node, in *Instance) {
		in.TrackProcesses = append(in.TrackProcesses, d.trackProcessUses(n, in.Name, in.TrackProcesses)...)
	}
	syncGroupBlock.keys["track_process"] = func(d *decoder, n *Node, g *SyncGroup) {
		g.TrackProcesses = append(g.TrackProcesses, d.trackProcessUses(n, g.Name, g.TrackProcesses)...)
	}
}

func (d *decoder) trackProcess(n *Node, c *Config) {
	name, ok := d.named(n)
	if !ok {
		return
	}
	tp := &TrackProcess{Pos: n.Pos, Name: name, Quorum: 1}
	walk(d, n, trackProcessBlock, tp)
	if tp.Process == "" {
		d.rep.lenient(n.Pos, n.Keyword, "%s has no process: ignored, as keepalived does", name)
		return
	}
	if !tp.FullCommand && len(tp.Process) > commLen {
		d.rep.warnf(n.Pos, n.Keyword, "%s: process %q never matches: the kernel keeps the first %d characters of a process's name (give full_command to match its command line)", name, tp.Process, commLen)
	}
	for _, o := range c.TrackProcesses {
		if o.Name == name {
			// keepalived finds the first of the name.
			d.rep.warnf(n.Pos, n.Keyword, "%s is already defined at %s: this one is never used", name, o.Pos)
		}
	}
	c.TrackProcesses = append(c.TrackProcesses, tp)
}

// processDelay reads delay, terminate_delay and fork_delay: decimal
// seconds from 0.000001 to 3600.
func (d *decoder) processDelay(n *Node, tp *TrackProcess) (time.Duration, bool) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return 0, false
	}
	v, err := parseTimer(n.Args[0])
	if err != nil || v < time.Microsecond || v > time.Hour {
		d.rep.lenient(n.Pos, n.Keyword, "%q for %s is not a time in seconds from 0.000001 to 3600: ignored, as keepalived does", n.Args[0], tp.Name)
		return 0, false
	}
	return v, true
}

var trackProcessBlock = &block[TrackProcess]{
	name: "vrrp_track_process",
	keys: map[string]func(*decoder, *Node, *TrackProcess){
		"process": func(d *decoder, n *Node, tp *TrackProcess) {
			if !d.noBlock(n) || !d.want(n, 1, -1) {
				return
			}
			if tp.Process != "" {
				d.rep.lenient(n.Pos, n.Keyword, "process already set for %s: %q ignored, as keepalived does", tp.Name, n.Args[0])
				return
			}
			tp.Process = n.Args[0]
			if len(n.Args) > 1 {
				tp.Params = append([]string(nil), n.Args[1:]...)
				if tp.ParamMatch == "" {
					tp.ParamMatch = "exact"
				}
				tp.FullCommand = true
			}
		},
		"param_match": func(d *decoder, n *Node, tp *TrackProcess) {
			if !d.noBlock(n) {
				return
			}
			switch {
			case len(n.Args) == 0:
				tp.ParamMatch = "exact"
			case n.Args[0] == "initial" || n.Args[0] == "partial":
				d.want(n, 1, 1)
				tp.ParamMatch = n.Args[0]
			default:
				d.rep.lenient(n.Pos, n.Keyword, "%q is not initial or partial: ignored, as keepalived does", n.Args[0])
				return
			}
			tp.FullCommand = true
		},
		"weight": func(d *decoder, n *Node, tp *TrackProcess) {
			if !d.noBlock(n) {
				return
			}
			if len(n.Args) == 0 {
				d.rep.lenient(n.Pos, n.Keyword, "no weight given for %s: ignored, as keepalived does", tp.Name)
				return
			}
			d.want(n, 1, 2)
			if tp.Weight != 0 {
				d.rep.lenient(n.Pos, n.Keyword, "weight already set for %s: %q ignored, as keepalived does", tp.Name, n.Args[0])
				return
			}
			w, err := strconv.Atoi(n.Args[0])
			if err != nil || w < -254 || w > 254 {
				d.rep.lenient(n.Pos, n.Keyword, "%q for %s is not in -254..254: ignored, as keepalived does", n.Args[0], tp.Name)
				return
			}
			if len(n.Args) > 1 {
				if n.Args[1] == "reverse" {
					tp.Reverse = true
				} else {
					d.rep.lenient(n.Pos, n.Keyword, "%q is not reverse: ignored, as keepalived does", n.Args[1])
				}
			}
			tp.Weight = w
		},
		"quorum": func(d *decoder, n *Node, tp *TrackProcess) {
			if !d.noBlock(n) || !d.want(n, 1, 1) {
				return
			}
			q, err := strconv.Atoi(n.Args[0])
			if err != nil || q < 1 || q > 65535 {
				d.rep.lenient(n.Pos, n.Keyword, "%q for %s is not in 1..65535: ignored, as keepalived does", n.Args[0], tp.Name)
				return
			}
			if tp.QuorumMax != nil && q > *tp.QuorumMax {
				d.rep.lenient(n.Pos, n.Keyword, "quorum %d of %s is greater than its quorum_max %d: ignored, as keepalived does", q, tp.Name, *tp.QuorumMax)
				return
			}
			tp.Quorum = q
		},
		"quorum_max": func(d *decoder, n *Node, tp *TrackProcess) {
			if !d.noBlock(n) || !d.want(n, 1, 1) {
				return
			}
			q, err := strconv.Atoi(n.Args[0])
			if err != nil || q < 0 || q > 65535 {
				d.rep.lenient(n.Pos, n.Keyword, "%q for %s is not in 0..65535: ignored, as keepalived does", n.Args[0], tp.Name)
				return
			}
			// keepalived allows 0 with the default quorum: no process at all.
			if (q != 0 || tp.Quorum > 1) && q < tp.Quorum {
				d.rep.lenient(n.Pos, n.Keyword, "quorum_max %d of %s is less than its quorum %d: ignored, as keepalived does", q, tp.Name, tp.Quorum)
				return
			}
			tp.QuorumMax = &q
			if q == 0 {
				tp.Quorum = 0
			} else if tp.Quorum == 0 {
				tp.Quorum = 1
			}
		},
		"delay": func(d *decoder, n *Node, tp *TrackProcess) {
			if v, ok := d.processDelay(n, tp); ok {
				tp.TerminateDelay, tp.ForkDelay = v, v
			}
		},
		"terminate_delay": func(d *decoder, n *Node, tp *TrackProcess) {
			if v, ok := d.processDelay(n, tp); ok {
				tp.TerminateDelay = v
			}
		},
		"fork_delay": func(d *decoder, n *Node, tp *TrackProcess) {
			if v, ok := d.processDelay(n, tp); ok {
				tp.ForkDelay = v
			}
		},
		"full_command": func(d *decoder, n *Node, tp *TrackProcess) {
			if d.noBlock(n) {
				d.want(n, 0, 0)
				tp.FullCommand = true
			}
		},
	},
}

// trackProcessUses reads an instance's or sync group's track_process
// block, "NAME [weight W [reverse|noreverse]]", as keepalived's
// alloc_track_process: at that point of the file, so a
// vrrp_track_process defined further down is not found. An entry without
// weight takes the process's weight and reverse; a weight outside
// -254..254 is reported and the process's used.
func (d *decoder) trackProcessUses(n *Node, owner string, have []TrackProcessUse) []TrackProcessUse {
	d.want(n, 0, 0)
	var out []TrackProcessUse
	d.lines(n, func(c *Node) {
		var tp *TrackProcess
		var known []string
		for _, p := range d.cfg.TrackProcesses {
			known = append(known, p.Name)
			if p.Name == c.Keyword && tp == nil {
				tp = p
			}
		}
		if tp == nil {
			// Reported by resolveTrackProcesses, which knows whether it
			// is defined further down.
			d.procMisses = append(d.procMisses, procMiss{pos: c.Pos, owner: owner, name: c.Keyword, known: known})
			return
		}
		for _, u := range append(have, out...) {
			if u.Name == c.Keyword {
				d.rep.lenient(c.Pos, "track_process", "(%s) duplicate track_process %s: ignored, as keepalived does", owner, c.Keyword)
				return
			}
		}
		u := TrackProcessUse{Name: tp.Name, Weight: tp.Weight, Reverse: tp.Reverse, pos: c.Pos}
		if len(c.Args) > 0 {
			if c.Args[0] != "weight" {
				d.rep.lenient(c.Pos, c.Keyword, "(%s) unknown track process option %q: the entry is ignored, as keepalived does", owner, c.Args[0])
				return
			}
			if len(c.Args) == 1 {
				d.rep.lenient(c.Pos, c.Keyword, "(%s) weight without a value for track process %s: the entry is ignored, as keepalived does", owner, c.Keyword)
				return
			}
			if w, err := strconv.Atoi(c.Args[1]); err != nil || w < -254 || w > 254 {
				d.rep.lenient(c.Pos, c.Keyword, "(%s) weight %q for track process %s is not in -254..254: the process's weight %d is used, as keepalived does", owner, c.Args[1], c.Keyword, tp.Weight)
			} else {
				u.Weight = w
			}
			if len(c.Args) >= 3 {
				switch c.Args[2] {
				case "reverse":
					u.Reverse = true
				case "noreverse":
					u.Reverse = false
				default:
					d.rep.lenient(c.Pos, c.Keyword, "(%s) %q is not reverse or noreverse: ignored, as keepalived does", owner, c.Args[2])
				}
				if len(c.Args) > 3 {
					d.rep.warnf(c.Pos, c.Keyword, "unexpected %q ignored", strings.Join(c.Args[3:], " "))
				}
			}
		}
		out = append(out, u)
	})
	return out
}

// resolveTrackProcesses applies keepalived's vrrp_complete_init rule for
// a sync group with an address owner among its members: the group's
// weighted track_process entries get weight 0. (An instance's own
// entries keep their weights: keepalived neither zeroes them for sync
// group members nor drops them for an address owner, whose priority a
// weight never moves.)
func (d *decoder) resolveTrackProcesses() {
	d.trackProcessNamespace()
	for _, m := range d.procMisses {
		later := ""
		for _, p := range d.cfg.TrackProcesses {
			if p.Name == m.name {
				later = " (keepalived looks it up where it is tracked, and it is defined further down, at " + p.Pos.String() + ")"
				break
			}
		}
		d.rep.lenient(m.pos, "track_process", "(%s) track process %s not found: ignored, as keepalived does%s%s", m.owner, m.name, later, didYouMean(m.name, m.known))
	}
	owner := map[string]bool{}
	for _, in := range d.cfg.Instances {
		if in.Priority == 255 && in.SyncGroup != "" {
			owner[in.SyncGroup] = true
		}
	}
	for _, g := range d.cfg.SyncGroups {
		if !owner[g.Name] {
			continue
		}
		for i := range g.TrackProcesses {
			if g.TrackProcesses[i].Weight != 0 {
				d.rep.lenient(g.TrackProcesses[i].pos, "track_process", "(%s) weighted track process %s with a member of priority 255: weight 0 used, as keepalived does", g.Name, g.TrackProcesses[i].Name)
				g.TrackProcesses[i].Weight = 0
			}
		}
	}
}

// procMiss is a track_process entry naming no vrrp_track_process defined
// before it.
type procMiss struct {
	pos         Pos
	owner, name string
	known       []string
}

// trackProcessNamespace warns of net_namespace (not supported: directord
// is run inside the namespace instead) beside tracked processes:
// keepalived subscribes to the process events before it enters the
// namespace, and tracks processes there; from inside the namespace
// directord cannot (the kernel's connector lives in the host's).
func (d *decoder) trackProcessNamespace() {
	tracked := false
	for _, in := range d.cfg.Instances {
		tracked = tracked || len(in.TrackProcesses) > 0
	}
	for _, g := range d.cfg.SyncGroups {
		tracked = tracked || len(g.TrackProcesses) > 0
	}
	if !tracked {
		return
	}
	for _, dg := range d.rep.diags {
		if dg.Unsupported && dg.Keyword == "net_namespace" {
			d.rep.warnf(dg.Pos, dg.Keyword, "with vrrp_track_process: keepalived follows processes from inside its net_namespace, directord run inside the namespace cannot (no process is counted)")
			return
		}
	}
}
