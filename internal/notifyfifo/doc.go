// Package notifyfifo writes keepalived's notify FIFOs (notify_fifo,
// vrrp_notify_fifo, lvs_notify_fifo): one line per VRRP or LVS event, in
// keepalived 2.2.7's format, to a named pipe that directord creates if
// missing, and runs the _script that reads it.
//
// A FIFO is opened as keepalived opens it, read-write and non-blocking:
// opening does not wait for a reader, and a write never blocks. A line
// that the pipe has no room for (no reader, or one too slow, with 64 KiB
// waiting) is dropped and counted (FIFO.Dropped); VRRP and the checks are
// never held up. Each line is shorter than PIPE_BUF, so it is written
// whole or not at all: a reader never sees half a line.
package notifyfifo
