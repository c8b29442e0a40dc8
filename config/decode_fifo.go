package config

// The notify FIFOs of global_defs: notify_fifo, vrrp_notify_fifo and
// lvs_notify_fifo, each with its _script, read as keepalived 2.2.7's
// global_parser.c reads them.

func init() {
	for _, kw := range []string{"notify_fifo", "vrrp_notify_fifo", "lvs_notify_fifo"} {
		field := fifoField(kw)
		globalBlock.keys[kw] = func(d *decoder, n *Node, g *Global) { d.notifyFIFO(n, field(g)) }
		globalBlock.keys[kw+"_script"] = func(d *decoder, n *Node, g *Global) { d.notifyFIFOScript(n, field(g)) }
	}
	globalBlock.keys["vrrp_notify_priority_changes"] = boolKey(func(g *Global) *bool { return &g.NotifyPriorityChanges }, nil)
	instanceBlock.keys["notify_priority_changes"] = boolKey(func(in *Instance) *bool { return &in.NotifyPriorityChanges }, instanceSet)
	syncGroupBlock.keys["notify_priority_changes"] = func(d *decoder, n *Node, g *SyncGroup) {
		if v, ok := d.flag(n); ok {
			g.NotifyPriorityChanges = &v
		}
	}
}

// resolvePriorityChanges gives each instance without its own
// notify_priority_changes its sync group's, else the global one, as
// keepalived's vrrp_complete_instance.
func (d *decoder) resolvePriorityChanges() {
	groups := map[string]*SyncGroup{}
	for _, g := range d.cfg.SyncGroups {
		groups[g.Name] = g
	}
	for _, in := range d.cfg.Instances {
		if _, ok := in.set["notify_priority_changes"]; ok {
			continue
		}
		if g := groups[in.SyncGroup]; g != nil && g.NotifyPriorityChanges != nil {
			in.NotifyPriorityChanges = *g.NotifyPriorityChanges
		} else {
			in.NotifyPriorityChanges = d.cfg.Global.NotifyPriorityChanges
		}
	}
}

func fifoField(kw string) func(g *Global) **NotifyFIFO {
	switch kw {
	case "vrrp_notify_fifo":
		return func(g *Global) **NotifyFIFO { return &g.VRRPNotifyFIFO }
	case "lvs_notify_fifo":
		return func(g *Global) **NotifyFIFO { return &g.LVSNotifyFIFO }
	}
	return func(g *Global) **NotifyFIFO { return &g.NotifyFIFO }
}

// notifyFIFO reads "notify_fifo PATH [user [group]]". keepalived keeps
// the first and ignores a second.
func (d *decoder) notifyFIFO(n *Node, f **NotifyFIFO) {
	if !d.noBlock(n) || !d.want(n, 1, 3) {
		return
	}
	if *f != nil && (*f).Path != "" {
		d.rep.warnf(n.Pos, n.Keyword, "already given at %s: %s ignored, as keepalived does", (*f).Pos, n.Args[0])
		return
	}
	if *f == nil {
		*f = &NotifyFIFO{}
	}
	(*f).Pos, (*f).Path = n.Pos, n.Args[0]
	if len(n.Args) > 1 {
		(*f).User = n.Args[1]
	}
	if len(n.Args) > 2 {
		(*f).Group = n.Args[2]
	}
}

// notifyFIFOScript reads "notify_fifo_script SCRIPT [user [group]]".
func (d *decoder) notifyFIFOScript(n *Node, f **NotifyFIFO) {
	if *f != nil && (*f).Script != nil {
		d.rep.warnf(n.Pos, n.Keyword, "already given at %s: ignored, as keepalived does", (*f).Script.Pos)
		return
	}
	s := d.script(n)
	if s == nil {
		return
	}
	if *f == nil {
		*f = &NotifyFIFO{Pos: n.Pos}
	}
	(*f).Script = s
}

// resolveFIFOs drops a FIFO script given without its FIFO, which
// keepalived never runs, and warns of FIFOs sharing a path: keepalived
// writes each line to both, so the reader reads it twice.
func (d *decoder) resolveFIFOs() {
	g := &d.cfg.Global
	seen := map[string]string{}
	for _, kw := range []string{"notify_fifo", "vrrp_notify_fifo", "lvs_notify_fifo"} {
		f := fifoField(kw)(g)
		if *f == nil {
			continue
		}
		if (*f).Path == "" {
			d.rep.warnf((*f).Pos, kw+"_script", "has no %s: it never runs, as in keepalived", kw)
			*f = nil
			continue
		}
		if prev, ok := seen[(*f).Path]; ok {
			d.rep.warnf((*f).Pos, kw, "%s is also %s: the FIFO names must all differ (each line would be written twice)", (*f).Path, prev)
		}
		seen[(*f).Path] = kw
	}
}
