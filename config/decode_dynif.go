package config

// dynamicInterfaces reads "dynamic_interfaces [allow_if_changes]" as
// keepalived 2.2.7's dynamic_interfaces_handler: the keyword alone turns
// it on; allow_if_changes also lets an interface come back as another
// kind (a macvlan where there was none, or on another parent); any other
// word is reported and ignored, the keyword still on, as keepalived
// ("Unknown dynamic_interfaces option").
func (d *decoder) dynamicInterfaces(n *Node, g *Global) {
	if !d.noBlock(n) {
		return
	}
	g.DynamicInterfaces = true
	if len(n.Args) == 0 {
		return
	}
	d.want(n, 0, 1)
	if n.Args[0] == "allow_if_changes" {
		g.AllowIfChanges = true
		return
	}
	d.rep.lenient(n.Pos, n.Keyword, "unknown dynamic_interfaces option %q, ignored as keepalived does", n.Args[0])
}

// disableLocalIGMP reads disable_local_igmp as keepalived 2.2.7's handler:
// it takes no argument and is on whatever follows it (a word after it is
// reported, and changes nothing).
func (d *decoder) disableLocalIGMP(n *Node, g *Global) {
	if !d.noBlock(n) {
		return
	}
	g.DisableLocalIGMP = true
	if len(n.Args) > 0 {
		d.rep.lenient(n.Pos, n.Keyword, "takes no argument: %q ignored, the keyword on, as keepalived does", n.Args[0])
	}
}
