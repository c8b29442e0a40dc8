package lvs

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
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
// (SCHED_IDLE: it runs only when nothing else wants the CPU). The guest's
// own accounting of a process's CPU moves in ticks of 10 ms, which a
// daemon running for moments far shorter than a tick may be found in a
// handful of times in a window; this measure does not depend on it, but
// counts the work of every process (the HTTPS server answering the
// checks, too) and of the kernel.
type spinner struct {
	n    *atomic.Uint64
	idle float64 // rounds a second when nothing else runs
}

// startSpinner starts the spinner and measures its rate over 3 s, while
// the guest is otherwise idle.
func startSpinner(b *testing.B, s *nstest.Scope) *spinner {
	path := filepath.Join(s.TempDir(), "spinner")
	m, err := mapCounter(path)
	if err != nil {
		b.Fatal(err)
	}
	s.Cleanup(func() { unix.Munmap(m) })
	cmd := exec.Command("chrt", "--idle", "0", os.Args[0])
	cmd.Env = append(os.Environ(), spinnerEnv+"="+path, "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=1")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sp := &spinner{n: (*atomic.Uint64)(unsafe.Pointer(&m[0]))}
	time.Sleep(500 * time.Millisecond) // started
	c0, t0 := sp.n.Load(), time.Now()
	time.Sleep(3 * time.Second)
	sp.idle = float64(sp.n.Load()-c0) / time.Since(t0).Seconds()
	if sp.idle == 0 {
		b.Fatal("the spinner does not spin")
	}
	return sp
}

// busy is the share of the CPU the rest used while the spinner made n
// rounds in d.
func (sp *spinner) busy(n uint64, d time.Duration) float64 {
	return max(0, 1-float64(n)/d.Seconds()/sp.idle)
}
