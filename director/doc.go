// Package director joins directord's parts into the director's data
// plane: it turns the configuration's virtual servers and the health
// checks' verdicts into the IPVS table the kernel must hold (Pool, with
// keepalived's quorum, hysteresis, sorry server and inhibit_on_failure
// semantics), and makes the kernel's connection sync daemons follow VRRP
// (SyncDaemons).
//
// Like the codecs and state machines elsewhere, the decisions here are
// pure functions of their inputs; the kernel is reached through the small
// interfaces ipvs.Kernel and SyncKernel, which tests fake.
package director
