package vrrp

import "log/slog"

// logger is the node's log with the instance's attributes (instance,
// vrid: docs/operations.md), for every record about the instance.
func (in *instance) logger() *slog.Logger {
	return in.node.log.With("instance", in.cfg.Name, "vrid", in.cfg.VRID)
}
