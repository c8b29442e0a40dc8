// Package lab builds a whole director pair inside one Linux host, out of
// network namespaces: a client behind a router, two directors running the
// directord binary on one configuration (VRRP, an IPVS direct-routing
// round-robin service, SSL_GET checks, connection sync), and three HTTPS
// real servers. make demo walks a newcomer through it (cmd/demo); the
// package's tests use the same lab to prove, end to end, that no request
// or established connection is lost where directord promises it is not.
//
// It needs root and the kernel's IPVS, which our hosts lack: the tests and
// the demo run in the User-Mode Linux guest of make integration
// (docs/testing.md, docs/lab.md).
//
// # Network namespaces
//
// Every host of the lab is a namespace, and traffic never leaves them. A
// namespace belongs to an OS thread, not to a goroutine: the client dials
// each connection on a thread locked inside the client's namespace and
// does its I/O on that connection from anywhere; the real servers listen
// the same way. An http.Transport would dial from other goroutines,
// outside the namespace, so the client speaks HTTP on its own connections.
//
// # Failures
//
// Lab's methods report failures through the TB given to New, from the
// goroutine that called New; Traffic and Conn, which run concurrently,
// return errors instead.
package lab
