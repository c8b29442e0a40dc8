package main

import (
	"fmt"
	"strings"
	"time"
)

// options are directord's command-line flags: keepalived's, so that a unit
// file or /etc/default entry written for keepalived works unchanged, plus
// directord's own long options.
type options struct {
	// begun and loaded are when run began and how long reading the
	// configuration took: the start's first phases, logged with -D.
	begun      time.Time
	loaded     time.Duration
	execToMain time.Duration // from the exec to main, if execKnown
	execKnown  bool
	file       string // -f, --use-file
	configTest bool   // -t, --config-test
	strict     bool   // --strict: refuse what keepalived runs past
	dumpConfig bool   // --dump-config
	dontFork   bool   // -n, --dont-fork
	logConsole bool   // -l, --log-console
	logDetail  bool   // -D, --log-detail
	vrrpOnly   bool   // -P, --vrrp
	checkOnly  bool   // -C, --check
	pidFile    string // -p, --pid
	configID   string // -i, --config-id
	version    bool   // -v, --version
	help       bool   // -h, --help
	logFormat  string // --log-format text|json
	metrics    string // --metrics-address
	control    string // --control-socket
	controlSet bool   // --control-socket was given
	netns      string // -s, --namespace: net_namespace, overriding the file's
	keepIPVS   bool   // -I, --dont-release-ipvs
	guardian   bool   // --guardian: the daemon's own companion (not for operators)
}

// flagSpec describes one option: its short and long names and whether it
// takes a value.
type flagSpec struct {
	short    byte
	long     string
	hasValue bool
	set      func(o *options, v string) error
}

func boolFlag(f func(o *options) *bool) func(*options, string) error {
	return func(o *options, _ string) error { *f(o) = true; return nil }
}

func strFlag(f func(o *options) *string) func(*options, string) error {
	return func(o *options, v string) error { *f(o) = v; return nil }
}

var flagSpecs = []flagSpec{
	{'f', "use-file", true, strFlag(func(o *options) *string { return &o.file })},
	{'t', "config-test", false, boolFlag(func(o *options) *bool { return &o.configTest })},
	{0, "strict", false, boolFlag(func(o *options) *bool { return &o.strict })},
	{0, "dump-config", false, boolFlag(func(o *options) *bool { return &o.dumpConfig })},
	{'n', "dont-fork", false, boolFlag(func(o *options) *bool { return &o.dontFork })},
	{'l', "log-console", false, boolFlag(func(o *options) *bool { return &o.logConsole })},
	{'D', "log-detail", false, boolFlag(func(o *options) *bool { return &o.logDetail })},
	{'P', "vrrp", false, boolFlag(func(o *options) *bool { return &o.vrrpOnly })},
	{'C', "check", false, boolFlag(func(o *options) *bool { return &o.checkOnly })},
	{'p', "pid", true, strFlag(func(o *options) *string { return &o.pidFile })},
	{'i', "config-id", true, strFlag(func(o *options) *string { return &o.configID })},
	{'v', "version", false, boolFlag(func(o *options) *bool { return &o.version })},
	{'h', "help", false, boolFlag(func(o *options) *bool { return &o.help })},
	{0, "log-format", true, func(o *options, v string) error {
		if v != "text" && v != "json" {
			return fmt.Errorf("--log-format takes text or json, not %q", v)
		}
		o.logFormat = v
		return nil
	}},
	{0, "metrics-address", true, strFlag(func(o *options) *string { return &o.metrics })},
	{0, "control-socket", true, func(o *options, v string) error { o.control, o.controlSet = v, true; return nil }},
	{'s', "namespace", true, func(o *options, v string) error {
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\x00") {
			return fmt.Errorf("--namespace: %q is not a network namespace name", v)
		}
		o.netns = v
		return nil
	}},
	{'I', "dont-release-ipvs", false, boolFlag(func(o *options) *bool { return &o.keepIPVS })},
	{0, "guardian", false, boolFlag(func(o *options) *bool { return &o.guardian })},
}

// parseFlags reads arguments the way keepalived's getopt_long does: short
// options may be grouped (-nlD), a short option's value may be attached
// (-f/etc/x.conf) or follow, a long option's value may follow "=" or come
// next.
func parseFlags(args []string) (*options, error) {
	o := &options{file: "/etc/keepalived/keepalived.conf", logFormat: "text", control: "/run/directord/directord.sock"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			spec := findLong(name)
			if spec == nil {
				return nil, fmt.Errorf("unknown option --%s", name)
			}
			if spec.hasValue && !hasVal {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("--%s needs a value", name)
				}
				i++
				val = args[i]
			} else if !spec.hasValue && hasVal {
				// keepalived's --config-test takes an optional log file;
				// directord writes to standard error and ignores it.
				if name != "config-test" {
					return nil, fmt.Errorf("--%s takes no value", name)
				}
			}
			if err := spec.set(o, val); err != nil {
				return nil, err
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				spec := findShort(a[j])
				if spec == nil {
					return nil, fmt.Errorf("unknown option -%c", a[j])
				}
				if !spec.hasValue {
					if err := spec.set(o, ""); err != nil {
						return nil, err
					}
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("-%c needs a value", a[j])
					}
					i++
					val = args[i]
				}
				if err := spec.set(o, val); err != nil {
					return nil, err
				}
				break
			}
		default:
			return nil, fmt.Errorf("unexpected argument %q", a)
		}
	}
	return o, nil
}

func findLong(name string) *flagSpec {
	for i := range flagSpecs {
		if flagSpecs[i].long == name {
			return &flagSpecs[i]
		}
	}
	return nil
}

func findShort(c byte) *flagSpec {
	for i := range flagSpecs {
		if flagSpecs[i].short == c {
			return &flagSpecs[i]
		}
	}
	return nil
}

const usage = `Usage: directord [OPTION...]
  -f, --use-file=FILE       configuration file (default /etc/keepalived/keepalived.conf)
  -t, --config-test         check the configuration and exit (exit 0: good, 4: unreadable, 5: errors)
      --strict              refuse what keepalived ignores or adjusts and runs past
                            (an unknown keyword, a value out of range, ...)
      --dump-config         print the resolved configuration as JSON and exit
  -i, --config-id=ID        select @ID conditional lines (default: host name up to its first dot)
  -n, --dont-fork           stay in the foreground (directord always does)
  -l, --log-console         log to standard error
  -D, --log-detail          log more detail
  -P, --vrrp                run VRRP only
  -C, --check               run health checks and IPVS only
  -I, --dont-release-ipvs   leave the virtual servers in the kernel at stop, for a
                            restart that adopts them without cutting a connection
  -p, --pid=FILE            write the process ID to FILE
  -s, --namespace=NAME      run in network namespace NAME (/run/netns/NAME),
                            overriding the file's net_namespace
      --log-format=FORMAT   text (default) or json
      --metrics-address=ADDR  serve Prometheus metrics on ADDR (HOST:PORT; off unless set)
      --control-socket=PATH   directorctl's socket (default /run/directord/directord.sock,
                              /run/directord/NAME/directord.sock in namespace NAME;
                              "none" for no socket)
  -v, --version             print the version and exit
  -h, --help                print this help and exit
`
