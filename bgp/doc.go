// Package bgp announces the addresses of the virtual servers this director
// can serve, through an embedded BGP speaker (GoBGP, used as a library),
// so that routers spread a VIP over every director that announces it
// (ECMP).
//
// It is split as the rest of directord: a pure core and a thin shell.
//
//   - Decide (decide.go) takes explicit inputs, the services programmed
//     in the kernel, their quorum, VRRP mastership per VIP, the drain flag
//     and whether directord is stopping, and returns for each address
//     whether it is announced and why. Plan turns two such decisions into
//     the ordered actions that get from one to the other, a withdraw always
//     before the address it concerns is removed. Both are plain functions:
//     later inputs (a fleet's votes, shared health) feed Decide.
//   - Speaker (speaker.go) is the small interface the rest of directord
//     sees; gobgp.go implements it with github.com/osrg/gobgp/v4, whose
//     types stay inside that file.
//   - Announcer (announcer.go) runs plans against a Speaker and the
//     addresses on lo, and keeps the status that directorctl and the
//     metrics show.
//
// # Network namespaces
//
// The speaker listens and connects in the network namespace of the
// goroutine that starts it, and addresses are added in the namespace the
// netlink handle was made in: tests start directord inside a namespace.
package bgp
