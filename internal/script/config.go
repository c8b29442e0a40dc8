package script

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/users"
)

// Entry is one script of a configuration as checked.
type Entry struct {
	At      string // file:line of the script's keyword (else of its block)
	Keyword string // vrrp_script NAME, notify_master, MISC_CHECK...
	Prog    *Prog
}

// Report is every script of a configuration as checked.
type Report struct {
	Entries []Entry
	// Violation is keepalived's "SECURITY VIOLATION": scripts will run
	// and enable_script_security is off.
	Violation bool
	// Insecure counts the scripts someone other than root could change.
	Insecure int
}

// Sections choose which of a configuration's scripts CheckConfig checks:
// those of the parts directord runs (-P, -C).
type Sections struct{ VRRP, LVS bool }

// CheckConfig checks every script of cfg in the chosen sections under its
// global_defs, as keepalived does at load and at each reload, and logs
// what keepalived logs: each insecure, missing or unexecutable script
// (disabled: a notify script does not run, a vrrp_script is no longer
// tracked, a MISC_CHECK is removed), and one SECURITY VIOLATION warning
// when scripts run without enable_script_security. log may be nil.
//
// The checks are kept (Runner.Prog): the parts that run the scripts get
// the same answer without checking again.
func CheckConfig(cfg *config.Config, sec Sections, log *slog.Logger) Report {
	r := NewRunner(&cfg.Global)
	var rep Report
	add := func(at config.Pos, kw string, s *config.Script) {
		// A bare notify_deleted is a flag (DELETED instead of FAULT),
		// not a script: nothing to check.
		if s != nil && len(s.Args) > 0 {
			if s.Pos.File != "" {
				at = s.Pos // the keyword's own line
			}
			rep.Entries = append(rep.Entries, Entry{At: at.String(), Keyword: kw, Prog: r.Prog(s)})
		}
	}
	notify := func(at config.Pos, n *config.Notify) {
		add(at, "notify_master", n.Master)
		add(at, "notify_backup", n.Backup)
		add(at, "notify_fault", n.Fault)
		add(at, "notify_stop", n.Stop)
		add(at, "notify_deleted", n.Deleted)
		add(at, "notify", n.Any)
	}
	fifo := func(kw string, f *config.NotifyFIFO) {
		if f != nil {
			add(f.Pos, kw, f.Script)
		}
	}
	if sec.VRRP || sec.LVS {
		fifo("notify_fifo_script", cfg.Global.NotifyFIFO)
	}
	if sec.LVS {
		fifo("lvs_notify_fifo_script", cfg.Global.LVSNotifyFIFO)
	}
	if sec.VRRP {
		fifo("vrrp_notify_fifo_script", cfg.Global.VRRPNotifyFIFO)
		for _, s := range cfg.Scripts {
			add(s.Pos, "vrrp_script "+s.Name, s.Script)
		}
		for _, in := range cfg.Instances {
			notify(in.Pos, &in.Notify)
		}
		for _, g := range cfg.SyncGroups {
			notify(g.Pos, &g.Notify)
		}
	}
	if sec.LVS {
		for _, vs := range cfg.VirtualServers {
			add(vs.Pos, "quorum_up", vs.QuorumUp)
			add(vs.Pos, "quorum_down", vs.QuorumDown)
			for _, rs := range vs.RealServers {
				add(rs.Pos, "notify_up", rs.NotifyUp())
				add(rs.Pos, "notify_down", rs.NotifyDown())
				for _, c := range rs.Checkers {
					if c.Misc != nil {
						add(c.Pos, "MISC_CHECK", c.Misc.Script)
					}
				}
			}
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx := context.Background()
	defaultUser := false // a script runs as the default user
	for _, e := range rep.Entries {
		p := e.Prog
		attrs := []any{"at", e.At, "keyword", e.Keyword, "script", p.Script.Command}
		if p.Searched && p.Path != "" {
			log.Warn("script resolved by a PATH search: give its full path", append(attrs, "path", p.Path)...)
		}
		if p.Insecure != "" {
			rep.Insecure++
		}
		if p.Script.User == "" && cfg.Global.ScriptUser == "" {
			defaultUser = true
		}
		switch {
		case p.Disabled != nil:
			log.Log(ctx, slog.LevelError, "script disabled: it will not run", append(attrs, "reason", p.Disabled.Error())...)
		case p.Insecure != "":
			log.Warn("unsafe permissions found for script: it runs because enable_script_security is off", append(attrs, "unsafe", p.Insecure, "user", p.User())...)
		}
		if p.Path != "" && !cfg.Global.EnableScriptSecurity {
			rep.Violation = true
		}
	}
	if defaultUser && !cfg.Global.EnableScriptSecurity {
		if _, err := users.Lookup("keepalived_script"); err != nil {
			// keepalived: "default user 'keepalived_script' for script
			// execution does not exist - please create."
			log.Warn("the default script user keepalived_script does not exist: scripts that name no user run as root; create it or set script_user")
		}
	}
	if rep.Violation {
		msg := "SECURITY VIOLATION - scripts are being executed but enable_script_security is not set"
		if rep.Insecure > 0 {
			msg += "; there are insecure scripts"
		}
		log.Warn(msg, "insecure", rep.Insecure)
	}
	return rep
}

// Key is what of the report changes how the scripts run, sorted and
// without positions: a reload whose scripts check differently (a
// permission fixed, a link repointed) must restart what runs them.
func (rep Report) Key() string {
	var out []string
	for _, e := range rep.Entries {
		p := e.Prog
		k := e.Keyword + " " + p.Script.Command + " -> " + p.Path + " as " + p.User()
		if p.Disabled != nil {
			k += " disabled"
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
