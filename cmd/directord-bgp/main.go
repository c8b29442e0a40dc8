// Command directord-bgp is directord's BGP speaker (GoBGP) in a process
// of its own, so that directord itself does not link GoBGP, gRPC and
// their protobuf types. directord starts it, beside its own binary, when
// the configuration has a bgp block (bgp.Process); it is not meant to be
// run by hand.
//
// It serves the speaker over its standard input and output, one JSON
// line per request, response or session event (bgp/proto.go), and logs
// to its standard error as slog JSON lines, which directord relays into
// its own log. It ignores SIGTERM, SIGINT and SIGHUP: directord decides
// when the routes go (withdrawn first, then bgp_withdraw_wait, then the
// sessions closed). At the end of its standard input, directord having
// stopped or died (even by SIGKILL), it closes every session with a
// Cease, so that the routers withdraw this director's routes, and exits;
// with -last-words N, it writes the records of that end to descriptor N,
// which directord gives it as its own standard error (the journal, under
// systemd), since nobody reads its pipe any more.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/directord/directord/bgp"
	"github.com/directord/directord/bgp/gobgp"
)

func main() {
	debug := flag.Bool("D", false, "log debug records too")
	lastWords := flag.Int("last-words", 0, "the descriptor to log to once directord is gone (0: none)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [-D] [-last-words FD]\n\ndirectord's BGP speaker, started by directord; its protocol is on standard input and output.\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	// A broken pipe must be an error to handle, not a death before the
	// sessions are closed; signals are directord's to act on.
	signal.Ignore(syscall.SIGPIPE, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	lvl := slog.LevelInfo
	if *debug {
		lvl = slog.LevelDebug
	}
	out := &output{w: os.Stderr}
	log := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: lvl}))
	sp := gobgp.New(log)
	srv := bgp.NewServer(sp, os.Stdout)
	sp.OnSession = srv.Event
	orphaned := false
	srv.Orphaned = func() {
		orphaned = true
		if *lastWords > 0 {
			out.set(os.NewFile(uintptr(*lastWords), "directord's standard error"))
		}
		log.Warn("directord-bgp: its input ended with the speaker running (directord is gone, or gave this process up): closing every session with a Cease")
	}
	err := srv.Serve(os.Stdin)
	if err != nil {
		log.Error("directord-bgp", "err", err)
		os.Exit(1)
	}
	if orphaned {
		log.Info("directord-bgp: every session closed; exiting")
	}
}

// output is the log's writer: the pipe that directord reads, then, once
// directord is gone, the descriptor of -last-words.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(b)
}

func (o *output) set(w io.Writer) {
	o.mu.Lock()
	o.w = w
	o.mu.Unlock()
}
