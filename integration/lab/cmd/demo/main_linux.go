package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/directord/directord/integration/lab"
)

// prefix names the demo's namespaces: lab-client, lab-lb1...
const prefix = "lab-"

func main() {
	// The lab runs this program again as each real server.
	lab.ServeRealServer()
	directord := flag.String("directord", "bin/uml/directord", "the directord binary")
	directorctl := flag.String("directorctl", "bin/uml/directorctl", "the directorctl binary")
	verbose := flag.Bool("v", false, "log the lab's details, and directord's logs at the end")
	rate := flag.Int("rate", 20, "the client's background traffic, new connections a second")
	active := flag.Bool("active", false, "the active-active lab: three directors behind a BGP router (make demo-active)")
	flag.Parse()
	t := &demoTB{verbose: *verbose, out: os.Stderr}
	d := &demo{t: t, out: os.Stdout, rate: *rate}
	// An interrupt stops the demo at its next step (see Helper), which
	// then cleans up as when it fails; if the demo is stuck, the cleanup
	// runs from here.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		s := <-sig
		fmt.Fprintf(t.out, "\ndemo: %v: stopping\n", s)
		t.interrupted.Store(true)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			fmt.Fprintf(t.out, "demo: cleaned up: %s\n", t.cleanup())
			os.Exit(130)
		}
	}()
	ok := t.run(func() {
		o := lab.Options{Directord: abs(t, *directord), Directorctl: abs(t, *directorctl), Prefix: prefix}
		if *active {
			d.runActive(o)
			return
		}
		d.run(o)
	})
	start := time.Now()
	left := t.cleanup()
	fmt.Fprintf(d.out, "\nCleaned up in %s: %s.\n", secs(time.Since(start)), left)
	close(done)
	switch {
	case t.interrupted.Load():
		os.Exit(130)
	case !ok:
		os.Exit(1)
	}
}

func abs(t *demoTB, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// demoTB is the nstest.TB that the lab needs, for a program: Fatal says
// why and unwinds to run, which returns false; the cleanups run at the
// end, last first, whatever happened.
type demoTB struct {
	verbose bool
	out     io.Writer

	mu       sync.Mutex
	failed   bool
	cleanups []func()
	once     sync.Once
	left     string

	// interrupted: a signal asked the demo to stop; cleaning: the
	// cleanups run.
	interrupted, cleaning atomic.Bool
}

type fatal struct{}

// run runs f and reports whether it ended without a Fatal.
func (t *demoTB) run(f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(fatal); !is {
				t.mu.Lock()
				t.failed = true
				t.mu.Unlock()
				fmt.Fprintf(t.out, "demo: panic: %v\n", r)
			}
			ok = false
		}
	}()
	f()
	return !t.Failed()
}

// Helper is where an interrupted demo stops: the lab calls it at the start
// of nearly every method, from the goroutine that runs the steps (its
// other goroutines report errors and never call it). It unwinds like a
// Fatal, but not from the cleanups.
func (t *demoTB) Helper() {
	if t.interrupted.Load() && !t.cleaning.Load() {
		panic(fatal{})
	}
}

func (t *demoTB) Fatal(args ...any) { t.fail(fmt.Sprint(args...)) }

func (t *demoTB) Fatalf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }

func (t *demoTB) Skip(args ...any) { t.fail(fmt.Sprint(args...)) }

func (t *demoTB) fail(msg string) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	fmt.Fprintf(t.out, "\ndemo: FAILED: %s\n", msg)
	panic(fatal{})
}

// Logf prints the lab's details with -v, and always once the demo failed
// (directord's logs come that way at the end).
func (t *demoTB) Logf(format string, args ...any) {
	if t.verbose || t.Failed() {
		fmt.Fprintf(t.out, format+"\n", args...)
	}
}

func (t *demoTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *demoTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *demoTB) TempDir() string {
	dir, err := os.MkdirTemp("", "directord-lab-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// cleanup runs the cleanups once, last first, and says what is left of
// the lab: its namespaces and processes.
func (t *demoTB) cleanup() string {
	t.once.Do(func() {
		t.cleaning.Store(true)
		t.mu.Lock()
		cs := t.cleanups
		t.cleanups = nil
		t.mu.Unlock()
		for i := len(cs) - 1; i >= 0; i-- {
			t.run(cs[i]) // a cleanup that fails leaves the others to run
		}
		t.left = leftovers()
	})
	return t.left
}

// leftovers counts the demo's namespaces still there, and the processes
// it started: directord, and this program run as a real server.
func leftovers() string {
	ns := 0
	if es, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range es {
			if strings.HasPrefix(e.Name(), prefix) {
				ns++
			}
		}
	}
	self, _ := os.Executable()
	procs := 0
	if es, err := os.ReadDir("/proc"); err == nil {
		for _, e := range es {
			pid, err := strconv.Atoi(e.Name()) // not self, thread-self...
			if err != nil || pid == os.Getpid() {
				continue
			}
			exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
			if err != nil {
				continue
			}
			if filepath.Base(exe) == "directord" || exe == self {
				procs++
			}
		}
	}
	return fmt.Sprintf("%d namespaces and %d processes (directord, real servers) left", ns, procs)
}

// step is one line of the summary.
type step struct {
	name     string
	took     time.Duration
	from, to time.Time
	note     string
	own      *lab.Tally // the step's own requests, if any
	traffic  bool       // whether the background traffic ran
}

// demo walks through the lab.
type demo struct {
	t     *demoTB
	out   io.Writer
	rate  int
	l     *lab.Lab
	tr    *lab.Traffic
	steps []step
	own   *lab.Tally // set by a step that sends its own requests
}

// printf prints the demo's story, until it is interrupted.
func (d *demo) printf(format string, args ...any) {
	if !d.t.interrupted.Load() {
		fmt.Fprintf(d.out, format, args...)
	}
}

// step runs f as the next step, titled, and prints its time; name and
// the note f returns make its line in the summary.
func (d *demo) step(name, title string, f func() string) {
	n := len(d.steps) + 1
	d.printf("\n%2d. %s\n", n, title)
	start, traffic := time.Now(), d.tr != nil
	d.own = nil
	note := f()
	end := time.Now()
	d.steps = append(d.steps, step{name: name, took: end.Sub(start), from: start, to: end, note: note, own: d.own, traffic: traffic})
	d.printf("    (%s)\n", secs(end.Sub(start)))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "      " + strings.ReplaceAll(s, "\n", "\n      ") + "\n"
}
