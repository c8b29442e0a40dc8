package config

import "strings"

// netNamespace reads the top-level "net_namespace NAME": directord runs
// in /run/netns/NAME. As keepalived 2.2.7, a second one is ignored with a
// warning, and one without a name is ignored.
func (d *decoder) netNamespace(n *Node, g *Global) {
	if !d.noBlock(n) {
		return
	}
	if len(n.Args) == 0 {
		d.rep.lenient(n.Pos, n.Keyword, "net_namespace name missing, ignored as keepalived does")
		return
	}
	if g.NetNamespace != "" {
		d.rep.lenient(n.Pos, n.Keyword, "duplicate net_namespace %s, ignored as keepalived does (%s is used, from %s)", n.Args[0], g.NetNamespace, g.netnsPos)
		return
	}
	d.want(n, 1, 1)
	if !d.netnsName(n, n.Args[0]) {
		return
	}
	g.NetNamespace, g.netnsPos = n.Args[0], n.Pos
}

// netNamespaceIPVS reads the top-level "net_namespace_ipvs [NAME]": the
// IPVS calls go to /run/netns/NAME, or without NAME to the host's own
// namespace (PID 1's), as keepalived 2.2.7.
func (d *decoder) netNamespaceIPVS(n *Node, g *Global) {
	if !d.noBlock(n) {
		return
	}
	if g.NetNamespaceIPVS != nil {
		d.rep.lenient(n.Pos, n.Keyword, "duplicate net_namespace_ipvs definition, ignored as keepalived does (the one at %s is used)", g.netnsIPVSPos)
		return
	}
	name := ""
	if len(n.Args) > 0 {
		d.want(n, 0, 1)
		name = n.Args[0]
		if !d.netnsName(n, name) {
			return
		}
	}
	g.NetNamespaceIPVS, g.netnsIPVSPos = &name, n.Pos
}

// netnsName refuses a name that is no entry of /run/netns (ip netns
// refuses the same): keepalived would open whatever path it makes.
func (d *decoder) netnsName(n *Node, name string) bool {
	if name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || len(name) > 255 {
		d.rep.errorf(n.Pos, n.Keyword, "%q is not a network namespace name (an entry of /run/netns, as ip netns names them)", name)
		return false
	}
	return true
}

// NetNamespacePos is where net_namespace was given, for messages about
// the namespace; the zero Pos when it was not.
func (g *Global) NetNamespacePos() Pos { return g.netnsPos }

// NetNamespaceIPVSPos is where net_namespace_ipvs was given.
func (g *Global) NetNamespaceIPVSPos() Pos { return g.netnsIPVSPos }
