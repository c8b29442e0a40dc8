// Package ipvs is directord's client of the kernel's IP Virtual Server,
// over generic netlink (mdlayher/genetlink), and the reconciler that keeps
// the kernel's table equal to what directord wants.
//
// The client covers what ipvsadm does: services by protocol, address and
// port (TCP, UDP, SCTP) or by firewall mark, IPv4 and IPv6, with every
// scheduler, flag and persistence setting; destinations with every
// forwarding method, weights and thresholds; 64-bit statistics;
// connection timeouts; and the connection sync daemons (start, stop,
// list), which no other Go library implements.
//
// Messages are built and read by pure functions (codec.go): they are
// tested byte for byte against what ipvsadm sends and the kernel answers,
// captured from a real kernel (testdata/). Client (client.go) is the thin
// shell that sends them; Apply writes many changes in one system call.
//
// # Network namespaces
//
// IPVS tables are per network namespace. Options.NetNS opens a Client in
// another namespace without moving the calling thread.
package ipvs
