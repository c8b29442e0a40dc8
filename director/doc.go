// Package director joins directord's parts into the director's data
// plane: it turns the configuration's virtual servers and the health
// checks' verdicts into the IPVS table the kernel must hold (Pool, with
// keepalived's quorum, hysteresis, sorry server and inhibit_on_failure
// semantics), and makes the kernel's connection sync daemons follow VRRP
// (SyncDaemons).
//
// A real server's weight and presence in the table are decided in one
// place, Weigh (weights.go), from the configuration, the checks' verdicts,
// the operator's drains and the quorum state; the quorum state moves only
// in quorumStep, at the transitions (a verdict, a drain, a reload, the
// start), where the quorum scripts run. Asking for the table (LVS.Want)
// or the status changes nothing.
//
// Like the codecs and state machines elsewhere, the decisions here are
// pure functions of their inputs; the kernel is reached through the small
// interfaces ipvs.Kernel and SyncKernel, which tests fake.
package director
