// Package bgp announces the addresses of the virtual servers this director
// can serve, through a BGP speaker (GoBGP, in the helper process
// directord-bgp), so that routers spread a VIP over every director that
// announces it (ECMP).
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
//     sees; package bgp/gobgp implements it with github.com/osrg/gobgp/v4,
//     whose types stay inside it. Only cmd/directord-bgp links that
//     package: Server (proto.go) serves its Speaker there over standard
//     input and output, and Process (process.go) is the Speaker directord
//     uses, which runs that helper, restarts it if it dies and replays
//     what it was told.
//   - Announcer (announcer.go) runs plans against a Speaker and the
//     addresses on lo, and keeps the status that directorctl and the
//     metrics show.
//
// # Network namespaces
//
// The speaker's process runs in the network namespace of the thread that
// forks it (directord runs wholly in one), and addresses are added in the
// namespace the netlink handle was made in: tests start directord inside
// a namespace.
package bgp
