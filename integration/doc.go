// Package integration holds the end-to-end tests: the directord binary
// itself, run in network namespaces on this host beside Debian's
// keepalived. They need root (CI runs as root) and never send traffic
// outside the namespaces they make.
package integration
