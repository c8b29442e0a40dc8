package lvs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/directord/directord/internal/nstest"
)

// spinnerEnv makes the test binary a spinner (see startSpinner) instead of
// running tests.
const spinnerEnv = "DIRECTORD_TEST_SPINNER"

func TestMain(m *testing.M) {
	if f := os.Getenv(spinnerEnv); f != "" {
		spin(f)
	}
	os.Exit(m.Run())
}

// sink keeps the spinner's arithmetic from being optimized away.
var sink uint64

// spin counts rounds of arithmetic into the 8 bytes of the file at path,
// for ever, without a system call (in the guest even a clock reading is
// one).
func spin(path string) {
	b, err := mapCounter(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "spinner:", err)
		os.Exit(1)
	}
	n := (*atomic.Uint64)(unsafe.Pointer(&b[0]))
	x := uint64(1)
	for {
		for range 1 << 14 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
		n.Add(1)
	}
}

func mapCounter(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(8); err != nil {
		return nil, err
	}
	return unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// spinner measures the CPU that everything else in the guest uses, by
// what it leaves to a process that spins at the lowest priority there is
// (SCHED_IDLE: a weight of 3 against a normal task's 1,024, and a waking
// task preempts it at once). The guest's
// own accounting of a process's CPU moves in ticks of 10 ms, which a
// daemon running for moments far shorter than a tick may be found in a
// handful of times in a window; this measure does not depend on it, but
// counts the work of every process (the HTTPS server answering the
// checks, too) and of the kernel.
type spinner struct {
	n      *atomic.Uint64
	exited chan struct{} // closed if the spinner process ends
	idle   float64       // rounds a second when nothing else runs
}

// startSpinner starts the spinner and measures its rate over 3 s, while
// the guest is otherwise idle. One spinner measures one CPU: the guest
// has one.
func startSpinner(b *testing.B, s *nstest.Scope) *spinner {
	if n := runtime.NumCPU(); n != 1 {
		b.Fatalf("%d CPUs: the spinner measures a guest of one", n)
	}
	path := filepath.Join(s.TempDir(), "spinner")
	m, err := mapCounter(path)
	if err != nil {
		b.Fatal(err)
	}
	s.Cleanup(func() { unix.Munmap(m) })
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("chrt", "--idle", "0", self)
	cmd.Env = append(os.Environ(), spinnerEnv+"="+path, "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	// Never left spinning by a benchmark killed at its time limit.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sp := &spinner{n: (*atomic.Uint64)(unsafe.Pointer(&m[0])), exited: make(chan struct{})}
	go func() { cmd.Wait(); close(sp.exited) }()
	s.Cleanup(func() { cmd.Process.Kill(); <-sp.exited })
	for deadline := time.Now().Add(10 * time.Second); sp.n.Load() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) || sp.dead() {
			b.Fatal("the spinner does not spin")
		}
	}
	sp.idle = sp.rate(b, 3*time.Second)
	return sp
}

// rate is the spinner's rounds a second over d.
func (sp *spinner) rate(b *testing.B, d time.Duration) float64 {
	c0, t0 := sp.n.Load(), time.Now()
	time.Sleep(d)
	r := float64(sp.n.Load()-c0) / time.Since(t0).Seconds()
	if r == 0 || sp.dead() {
		b.Fatal("the spinner stopped")
	}
	return r
}

func (sp *spinner) dead() bool {
	select {
	case <-sp.exited:
		return true
	default:
		return false
	}
}

// busy is the share of the CPU the rest used while the spinner made n
// rounds in d; below 0 (the guest idler than at calibration) says the
// measure is off, and is reported as it is.
func (sp *spinner) busy(b *testing.B, n uint64, d time.Duration) float64 {
	if sp.dead() {
		b.Fatal("the spinner stopped during the window")
	}
	return 1 - float64(n)/d.Seconds()/sp.idle
}
