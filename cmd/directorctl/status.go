package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/directord/directord/internal/control"
)

// timeLayout is how directorctl writes a moment, in the local zone.
const timeLayout = "2006-01-02 15:04:05 MST"

// writeStatus writes st for a person: a header, the VRRP instances, then
// each virtual server with its real servers. Durations are counted back
// from now.
func writeStatus(w io.Writer, st control.Status, now time.Time) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("directord %s, pid %d, up since %s\n", st.Version, st.PID, when(st.Started, now))
	p("config: %s\n", st.ConfigFile)
	p("last reload: %s\n", reloadLine(st, now))
	p("ipvs: %d operations, %d errors, last sync %s\n", st.IPVS.Operations, st.IPVS.Errors, ago(st.IPVS.LastSync, now))
	if len(st.Drained) > 0 {
		p("drained: %s\n", strings.Join(st.Drained, ", "))
	}

	p("\nVRRP instances:")
	if len(st.Instances) == 0 {
		p(" none\n")
	} else {
		p("\n")
		rows := [][]string{{"NAME", "VRID", "INTERFACE", "STATE", "SINCE", "PRIO/EFFECTIVE", "MASTER", "VIPS"}}
		for _, in := range st.Instances {
			rows = append(rows, []string{
				in.Name, fmt.Sprint(in.VRID), orDash(in.Interface), in.State + map[bool]string{true: " (handed over)"}[in.HandedOver], ago(in.Since, now),
				fmt.Sprintf("%d/%d", in.Priority, in.EffectivePriority),
				orDash(in.MasterAddr), orDash(strings.Join(in.VIPs, ", ")),
			})
		}
		table(&b, "  ", rows)
	}

	p("\nVirtual servers:")
	if len(st.VirtualServers) == 0 {
		p(" none\n")
	} else {
		p("\n")
	}
	for i, vs := range st.VirtualServers {
		if i > 0 {
			p("\n")
		}
		quorum := "quorum up"
		if !vs.QuorumUp {
			quorum = "quorum DOWN"
		}
		p("  %s (%s): %s, %s, %s, %s\n", vs.Name, vs.Position, vs.Protocol, vs.Scheduler, vs.Forwarding, quorum)
		if vs.Digest != "" {
			// The same on every director that programs the same table.
			p("    ipvs digest %s\n", vs.Digest)
		}
		if len(vs.Reals) == 0 {
			p("    no real servers\n")
			continue
		}
		rows := [][]string{{"ADDR", "HEALTH", "WEIGHT", "LAST CHECK", "LATENCY", "REASON"}}
		for _, rs := range vs.Reals {
			first := []string{rs.Addr, health(rs), weight(rs)}
			if len(rs.Checks) == 0 && len(rs.Unchecked) == 0 {
				rows = append(rows, append(first, "none", "-", ""))
				continue
			}
			for i, c := range rs.Checks {
				lead := first
				if i > 0 {
					lead = []string{"", "", ""}
				}
				rows = append(rows, append(lead, checkCell(c, now), latency(c), c.Reason))
			}
			// Checkers directord does not have check nothing: said on
			// their own lines, so that no one takes "up" for a verdict.
			for i, u := range rs.Unchecked {
				lead := first
				if i > 0 || len(rs.Checks) > 0 {
					lead = []string{"", "", ""}
				}
				why := "not supported by directord: checks nothing"
				if len(rs.Checks) == 0 {
					why += "; UNCHECKED, always alive"
				}
				rows = append(rows, append(lead, "not run", "-", u+" "+why))
			}
		}
		table(&b, "    ", rows)
	}
	if g := st.BGP; g != nil {
		drained := ""
		if g.Drained {
			drained = ", DRAINED (directorctl undrain-director)"
		}
		p("\nBGP: AS %d, router_id %s%s\n", g.LocalAS, g.RouterID, drained)
		rows := [][]string{{"NEIGHBOR", "AS", "STATE", "UP", "BFD", "SENT"}}
		for _, n := range g.Neighbors {
			up := "-"
			if !n.Since.IsZero() {
				up = ago(n.Since, now)
			}
			rows = append(rows, []string{n.Address, fmt.Sprint(n.RemoteAS), n.State, up, orDash(n.BFD), fmt.Sprint(n.PrefixesSent)})
		}
		table(&b, "  ", rows)
		if len(g.Addresses) > 0 {
			p("\n")
			rows = [][]string{{"ADDRESS", "ANNOUNCED", "SINCE", "DEV", "REASON"}}
			for _, a := range g.Addresses {
				since := "-"
				if !a.Since.IsZero() {
					since = ago(a.Since, now)
				}
				rows = append(rows, []string{a.Prefix, map[bool]string{true: "yes", false: "NO"}[a.Announced], since, orDash(a.Dev), a.Reason + ": " + a.Detail})
			}
			table(&b, "  ", rows)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// table writes rows as aligned columns, each line after indent, with no
// trailing blanks.
func table(b *bytes.Buffer, indent string, rows [][]string) {
	var t bytes.Buffer
	tw := tabwriter.NewWriter(&t, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	for line := range strings.Lines(t.String()) {
		b.WriteString(indent)
		b.WriteString(strings.TrimRight(line, " \n"))
		b.WriteByte('\n')
	}
}

func reloadLine(st control.Status, now time.Time) string {
	counts := fmt.Sprintf("(since start: %d OK, %d failed)", st.ReloadsOK, st.ReloadsFailed)
	r := st.LastReload
	switch {
	case r == nil:
		return "none " + counts
	case r.OK:
		return fmt.Sprintf("%s, OK %s", when(r.At, now), counts)
	}
	running := "the one read at start"
	if !st.LastGoodReload.IsZero() {
		running = "the one reloaded " + when(st.LastGoodReload, now)
	}
	return fmt.Sprintf("%s, FAILED %s: %s\n  running configuration: %s", when(r.At, now), counts, r.Error, running)
}

func health(rs control.Real) string {
	h := "down"
	if rs.Alive {
		h = "up"
	}
	if len(rs.Checks) == 0 && len(rs.Unchecked) > 0 {
		h += " (unchecked)"
	}
	if rs.Drained {
		return "drained (" + h + ")"
	}
	return h
}

// weight is configured→effective; "absent" is a real server that is not
// in the kernel's table.
func weight(rs control.Real) string {
	eff := fmt.Sprint(rs.EffectiveWeight)
	if rs.EffectiveWeight < 0 {
		eff = "absent"
	}
	return fmt.Sprintf("%d→%s", rs.Weight, eff)
}

func checkCell(c control.Check, now time.Time) string {
	cell := c.Type + " pending"
	if c.Result != "" {
		cell = fmt.Sprintf("%s %s %s", c.Type, c.Result, ago(c.At, now))
	}
	if c.Suspended {
		cell += ", suspended (ha_suspend)"
	}
	return cell
}

func latency(c control.Check) string {
	if c.Result == "" || c.Latency <= 0 {
		return "-"
	}
	if c.Latency < time.Second {
		return c.Latency.Round(time.Microsecond).String()
	}
	return c.Latency.Round(time.Millisecond).String()
}

// when is t in the local zone and how long ago it was.
func when(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s)", t.Local().Format(timeLayout), ago(t, now))
}

// ago is how long before now t was, to the second under an hour and to
// the minute above: "42s ago", "3h12m ago", "2d4h ago".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now" // the daemon's clock is the same; rounding
	case d < time.Hour:
		return d.Round(time.Second).String() + " ago"
	case d < 24*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s") + " ago"
	}
	days := int(d / (24 * time.Hour))
	hours := int(d%(24*time.Hour)) / int(time.Hour)
	return fmt.Sprintf("%dd%dh ago", days, hours)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
