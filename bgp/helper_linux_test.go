package bgp

// The director of the FRR tests: this test binary run again inside a
// director's namespace (the speaker's helper, directord-bgp, built once
// per run, is started by Process in the namespace of the thread that
// forks it, so a director needs a whole process in its namespace). It
// runs the speaker and the announcer on a configuration file, its inputs
// driven by lines on its standard input, and says on its standard output
// when each line is applied.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nstest"
)

// tellingSpeaker says when the speaker stops and starts.
type tellingSpeaker struct {
	*Process
	say func(string, ...any)
}

func (s tellingSpeaker) Start(ctx context.Context, c *config.BGP) error {
	s.say("speaker start AS %d router_id %s", c.LocalAS, c.RouterID)
	return s.Process.Start(ctx, c)
}

func (s tellingSpeaker) Stop(ctx context.Context) error {
	s.say("speaker stop")
	return s.Process.Stop(ctx)
}

const helperEnv = "DIRECTORD_BGP_TEST_DIRECTOR"

// speakerEnv names the directord-bgp a director runs; set when the tests
// start, it is used instead of one built from ../cmd/directord-bgp.
const speakerEnv = "DIRECTORD_BGP_TEST_SPEAKER"

var speaker struct {
	once      sync.Once
	path, dir string
	err       error
}

// speakerHelper is the directord-bgp the directors run, built at the
// first call.
func speakerHelper(t nstest.TB) string {
	t.Helper()
	speaker.once.Do(func() {
		if speaker.path = os.Getenv(speakerEnv); speaker.path != "" {
			return
		}
		if speaker.dir, speaker.err = os.MkdirTemp("", "bgp-speaker"); speaker.err != nil {
			return
		}
		speaker.path = filepath.Join(speaker.dir, HelperName)
		if out, err := exec.Command("go", "build", "-o", speaker.path, "../cmd/directord-bgp").CombinedOutput(); err != nil {
			speaker.err = fmt.Errorf("go build ../cmd/directord-bgp: %v\n%s", err, out)
		}
	})
	if speaker.err != nil {
		t.Fatal(speaker.err)
	}
	return speaker.path
}

func TestMain(m *testing.M) {
	if file := os.Getenv(helperEnv); file != "" {
		os.Exit(runDirector(file))
	}
	code := m.Run()
	if speaker.dir != "" {
		os.RemoveAll(speaker.dir)
	}
	os.Exit(code)
}

func loadInputs(file string) (*config.Config, Inputs, error) {
	cfg, diags := config.Load(file, config.Options{Hostname: "director"})
	if diags.HasErrors() || cfg.Global.BGP == nil {
		return nil, Inputs{}, fmt.Errorf("%s: %s", file, diags.Errors())
	}
	var in Inputs
	for _, vs := range cfg.VirtualServers {
		if vs.Announce != nil {
			for _, p := range vs.AnnouncedPrefixes() {
				in.Services = append(in.Services, Service{Name: vs.Name(), Prefix: p,
					Dev: vs.Announce.Dev, Programmed: true, Quorum: true})
			}
		}
	}
	return cfg, in, nil
}

// runDirector reads commands: "quorum on|off", "drain", "undrain",
// "reload FILE", "status", "stop"; each answered by "ok" (or "status
// JSON"), "error: ..." on failure. Session changes are printed as
// "session ADDR STATE".
func runDirector(file string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	cfg, in, err := loadInputs(file)
	if err != nil {
		say("error: %v", err)
		return 1
	}
	ctx := context.Background()
	sp := &Process{Path: os.Getenv(speakerEnv), Log: log,
		OnSession: func(ev SessionEvent) { say("session %s %s", ev.Neighbor, ev.State) }}
	if err := sp.Start(ctx, cfg.Global.BGP); err != nil {
		say("error: %v", err)
		return 1
	}
	h, err := netlink.NewHandle()
	if err != nil {
		say("error: %v", err)
		return 1
	}
	a := NewAnnouncer(sp, NetlinkAddresses{H: h}, cfg.Global.BGP.WithdrawWait, log)
	a.OnAction = func(act Action, err error) {
		if err == nil && (act.Kind == Announce || act.Kind == Withdraw) {
			say("action %s %s %s", act.Kind, act.Prefix, act.Decision.Reason)
		}
	}
	rid, err := RouterID(cfg.Global.BGP)
	if err != nil {
		say("error: %v", err)
		return 1
	}
	go a.Run(ctx)
	apply := func() { a.Wait(ctx, a.Set(in)); say("ok") }
	apply()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "quorum":
			for i := range in.Services {
				in.Services[i].Quorum = len(f) > 1 && f[1] == "on"
			}
			apply()
		case "drain", "undrain":
			in.Drained = f[0] == "drain"
			apply()
		case "reload":
			c, next, err := loadInputs(f[1])
			if err != nil {
				say("error: %v", err)
				continue
			}
			// directord's reload (cmd/directord's reconfigure).
			rid, err = Reconfigure(ctx, tellingSpeaker{sp, say}, a, in, cfg.Global.BGP, c.Global.BGP, rid)
			if err != nil {
				say("error: %v", err)
				continue
			}
			cfg = c
			a.SetWithdrawWait(c.Global.BGP.WithdrawWait)
			for i := range next.Services {
				next.Services[i].Quorum = len(in.Services) == 0 || in.Services[0].Quorum
			}
			next.Drained = in.Drained
			in = next
			apply()
		case "status":
			ns, _ := sp.Neighbors(ctx)
			b, _ := json.Marshal(struct {
				Neighbors []NeighborStatus
				Addresses []AddressStatus
			}{ns, a.Status()})
			say("status %s", b)
		case "stop":
			// directord's SIGTERM: withdraw, wait, addresses off, sessions closed.
			if err := a.Stop(ctx, in); err != nil {
				say("error: %v", err)
			}
			sp.Stop(ctx)
			say("ok")
			return 0
		default:
			say("error: unknown command %q", f[0])
		}
	}
	return 0
}
