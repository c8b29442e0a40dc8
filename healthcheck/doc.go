// Package healthcheck proves that each real server works: SSL_GET and
// HTTP_GET fetch URLs and check the status and digest, TCP_CHECK connects,
// UDP_CHECK sends a datagram, DNS_CHECK asks a query, SMTP_CHECK greets
// and quits, MISC_CHECK runs a script, each as keepalived does.
//
// Verdict is the pure part: probe results in, a checker's state out, with
// keepalived's retries. A fault of the director itself (no route, no
// descriptor) is Unknown and never counts against a real server.
package healthcheck
