// Command directorctl asks a running directord, through its control
// socket, for its status, to drain or undrain a real server, or to reload
// its configuration. Only root may use it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/directord/directord/internal/control"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `Usage: directorctl [OPTION...] COMMAND
Asks the directord running on this host, through its control socket; root only.

Commands:
  status             VRRP instances, virtual servers and their real servers
  drain ADDR:PORT    set a real server to weight 0 in every virtual server that
                     has it: its connections continue, new ones go to the others;
                     it stays drained, across reloads, until undrain
  undrain ADDR:PORT  give a drained real server its weight back
  reload             read the configuration file again, as SIGHUP does
  handover [NAME]    give up mastership of VRRP instance NAME (every instance
                     without one): priority 0 adverts, then backup at priority 1
                     while a peer is master; waits for the peer and says how
                     long it took; holds across reloads until resume
  resume [NAME]      let the instance compete again at its own priority
  drain-director     withdraw every BGP route of this director (bgp block):
                     the addresses stay on lo, what still arrives is served;
                     returns once withdrawn; holds across reloads
  undrain-director   announce again what this director can serve
  help               print this help

An IPv6 real server is written [ADDR]:PORT.

Options:
  -s, --socket=PATH  the control socket (default ` + control.DefaultSocket + `)
      --json         print the answer as JSON, for tools
  -h, --help         print this help and exit
      --version      print the version and exit

Exit status: 0 done, 1 failed (a rejected reload too), 2 usage error.
`

// options are directorctl's command line.
type options struct {
	socket  string
	json    bool
	help    bool
	version bool
	args    []string // the command and its arguments
}

// parseArgs reads options anywhere on the line ("status --json" works);
// "--" ends them.
func parseArgs(args []string) (options, error) {
	o := options{socket: control.DefaultSocket}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			o.args = append(o.args, args[i+1:]...)
			return o, nil
		case a == "--json":
			o.json = true
		case a == "-h" || a == "--help":
			o.help = true
		case a == "--version":
			o.version = true
		case a == "-s" || a == "--socket":
			if i+1 >= len(args) {
				return o, fmt.Errorf("%s needs a path", a)
			}
			i++
			o.socket = args[i]
		case strings.HasPrefix(a, "--socket="):
			o.socket = strings.TrimPrefix(a, "--socket=")
		case strings.HasPrefix(a, "-s"):
			o.socket = a[2:]
		case strings.HasPrefix(a, "-") && a != "-":
			return o, fmt.Errorf("unknown option %s", a)
		default:
			o.args = append(o.args, a)
		}
	}
	if o.socket == "" {
		return o, errors.New("the socket path is empty")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if err != nil {
		return usageError(stderr, err)
	}
	switch {
	case o.help || (len(o.args) > 0 && o.args[0] == "help"):
		fmt.Fprint(stdout, usage)
		return exitOK
	case o.version:
		fmt.Fprintf(stdout, "directorctl %s\n", version)
		return exitOK
	case len(o.args) == 0:
		return usageError(stderr, errors.New("no command"))
	}
	cmd, rest := o.args[0], o.args[1:]
	c := control.Dial(o.socket)
	switch cmd {
	case "status":
		if len(rest) > 0 {
			return usageError(stderr, errors.New("status takes no argument"))
		}
		return status(ctx, c, o, stdout, stderr)
	case "drain", "undrain":
		if len(rest) != 1 {
			return usageError(stderr, fmt.Errorf("%s takes one real server, ADDR:PORT", cmd))
		}
		addr, err := netip.ParseAddrPort(rest[0])
		if err != nil {
			return usageError(stderr, fmt.Errorf("%s: %q is not ADDR:PORT ([ADDR]:PORT for IPv6)", cmd, rest[0]))
		}
		return drain(ctx, c, o, addr, cmd == "drain", stdout, stderr)
	case "reload":
		if len(rest) > 0 {
			return usageError(stderr, errors.New("reload takes no argument"))
		}
		return reload(ctx, c, o, stdout, stderr)
	case "drain-director", "undrain-director":
		if len(rest) > 0 {
			return usageError(stderr, fmt.Errorf("%s takes no argument", cmd))
		}
		on := cmd == "drain-director"
		if err := c.DrainDirector(ctx, on); err != nil {
			return fail(stderr, fmt.Errorf("%s: %w", cmd, err))
		}
		switch {
		case o.json:
			return printJSON(stdout, stderr, struct {
				Drained bool `json:"drained"`
			}{on})
		case on:
			fmt.Fprintln(stdout, "drained: every BGP route of this director is withdrawn; its addresses stay and what still arrives is served.\n"+
				"It stays drained, across reloads, until: directorctl undrain-director")
		default:
			fmt.Fprintln(stdout, "undrained: what this director can serve is announced again.")
		}
		return exitOK
	case "handover", "resume":
		if len(rest) > 1 {
			return usageError(stderr, fmt.Errorf("%s takes at most one VRRP instance", cmd))
		}
		name := ""
		if len(rest) == 1 {
			name = rest[0]
		}
		if cmd == "resume" {
			if err := c.Resume(ctx, name); err != nil {
				return fail(stderr, fmt.Errorf("resume: %w", err))
			}
			if !o.json {
				fmt.Fprintln(stdout, "resumed: the instance competes again at its own priority")
			}
			return exitOK
		}
		return handover(ctx, c, o, name, stdout, stderr)
	}
	return usageError(stderr, fmt.Errorf("unknown command %q", cmd))
}

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "directorctl: %v\n%s", err, usage)
	return exitUsage
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "directorctl: %v\n", err)
	return exitFailure
}

func status(ctx context.Context, c *control.Client, o options, stdout, stderr io.Writer) int {
	st, err := c.Status(ctx)
	if err != nil {
		return fail(stderr, err)
	}
	if o.json {
		return printJSON(stdout, stderr, st)
	}
	if err := writeStatus(stdout, st, time.Now()); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// drainResult is what drain and undrain print with --json.
type drainResult struct {
	Real    string `json:"real"`
	Drained bool   `json:"drained"`
}

func drain(ctx context.Context, c *control.Client, o options, addr netip.AddrPort, on bool, stdout, stderr io.Writer) int {
	verb := "undrain"
	if on {
		verb = "drain"
	}
	if err := c.Drain(ctx, addr.String(), on); err != nil {
		return fail(stderr, fmt.Errorf("%s %s: %w", verb, addr, err))
	}
	switch {
	case o.json:
		return printJSON(stdout, stderr, drainResult{Real: addr.String(), Drained: on})
	case on:
		fmt.Fprintf(stdout, "drained %s: weight 0 in every virtual server that has it.\n"+
			"Its established connections continue; new ones go to the other real servers.\n"+
			"It stays at weight 0, across reloads, until: directorctl undrain %s\n", addr, addr)
	default:
		fmt.Fprintf(stdout, "undrained %s: it has its weight again (while its checks pass).\n", addr)
	}
	return exitOK
}

func reload(ctx context.Context, c *control.Client, o options, stdout, stderr io.Writer) int {
	r, err := c.Reload(ctx)
	if err != nil && !errors.Is(err, control.ErrReloadFailed) {
		return fail(stderr, err) // directord did not answer with an outcome
	}
	if o.json {
		if code := printJSON(stdout, stderr, r); code != exitOK {
			return code
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "directorctl: %v\ndirectord goes on with the configuration it was running.\n", err)
		return exitFailure
	}
	if !o.json {
		fmt.Fprintln(stdout, "reload OK")
	}
	return exitOK
}

func handover(ctx context.Context, c *control.Client, o options, name string, stdout, stderr io.Writer) int {
	r, err := c.Handover(ctx, name)
	if err != nil && len(r.Instances) == 0 {
		return fail(stderr, fmt.Errorf("handover: %w", err))
	}
	if o.json {
		if code := printJSON(stdout, stderr, r); code != exitOK {
			return code
		}
	} else {
		for _, i := range r.Instances {
			if i.OK {
				fmt.Fprintf(stdout, "%s: handed over to %s in %v\n", i.Name, orDash(i.Master), i.Took.Round(time.Millisecond))
			} else {
				fmt.Fprintf(stdout, "%s: %s\n", i.Name, i.Error)
			}
		}
		fmt.Fprintln(stdout, "This director stays backup until: directorctl resume"+map[bool]string{true: "", false: " " + name}[name == ""])
	}
	if err != nil {
		return exitFailure
	}
	return exitOK
}

func printJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}
