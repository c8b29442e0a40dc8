// Package alert mails keepalived's e-mail alerts (notification_email,
// smtp_server, smtp_alert): VRRP instance and sync group transitions,
// real servers going up and down, virtual servers gaining and losing
// their quorum, with keepalived 2.2.7's subjects and bodies.
//
// A Mailer never blocks its caller: Send puts the message on a bounded
// queue and returns; one goroutine talks to the SMTP server, one message
// at a time, each step bounded by smtp_connect_timeout. When the queue is
// full (a slow or dead server) the message is dropped and counted. A nil
// *Mailer sends nothing, so callers need not test for one.
//
// The SMTP client is ours, not net/smtp: keepalived sends HELO (never
// EHLO), then MAIL FROM, one RCPT TO per address, DATA and QUIT, and
// net/smtp's Client always tries EHLO first. The dialogue here is
// keepalived's, step for step, so that a relay that accepts keepalived's
// mail accepts ours.
package alert
