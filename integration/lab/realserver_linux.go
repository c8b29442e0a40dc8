package lab

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// RealServer is one real server: a process of its own in its namespace,
// at directord's own priority (realServerNice), as a real server is a
// host of its own: neither the client's load nor anything else busy on
// the lab's machine at an ordinary priority can starve it. It serves HTTPS on port 443 of every address there: its own, where
// the SSL_GET checks come, and the VIP on lo, where the client's requests
// come by direct routing. It answers / with its name and /healthz with
// "ok".
type RealServer struct {
	l    *Lab
	Name string // rs1, rs2, rs3
	Addr netip.Addr
	NS   *nstest.NS
	proc *nstest.Process
}

// The environment that makes the program a real server (ServeRealServer).
const (
	envRealServer = "DIRECTORD_LAB_REAL_SERVER" // its name
	envLabDir     = "DIRECTORD_LAB_DIR"         // where its certificate is
)

// Start starts the real server's process, the lab's own program run
// again, and waits until it listens.
func (r *RealServer) Start() {
	r.l.t.Helper()
	r.start()
	r.waitListening()
}

func (r *RealServer) start() {
	t := r.l.t
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r.proc = nstest.Start(t, r.NS, "nice", "-n", fmt.Sprint(realServerNice),
		"env", envRealServer+"="+r.Name, envLabDir+"="+r.l.dir, exe)
}

// realServerNice is the real servers' nice value: directord's own
// (vrrp_priority's default, -15). In the lab they share one CPU with the
// directors, the client and whatever else the guest runs; at nice 0 a
// busy process there halves their CPU, their TLS handshakes outlast the
// checks' connect_timeout and the directors take them out of the pool,
// rightly by the checks' rules, for a slowness no real server on a host
// of its own would have. Each such removal resets the connections begun
// to it (expire_nodest_conn): what a starved lab counted as lost
// connections and failed requests.
const realServerNice = -15

// waitListening waits until the process listens. Starting a program in
// the guest takes a second or two when it is busy, more now and then.
func (r *RealServer) waitListening() {
	t := r.l.t
	t.Helper()
	WaitFor(t, 30*time.Second, r.Name+" listening", func() bool {
		if !r.Running() {
			t.Fatalf("%s ended at start", r.Name)
		}
		return r.listening()
	})
}

// listening reports whether a socket listens on the service's port in
// the real server's namespace.
func (r *RealServer) listening() bool {
	var b []byte
	if err := inNS(r.NS, func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/tcp")
		return err
	}); err != nil {
		return false
	}
	// sl local_address rem_address st: a listener is state 0A.
	port := fmt.Sprintf(":%04X", ServicePort)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 3 && strings.HasSuffix(f[1], port) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// Running reports whether the real server's process runs.
func (r *RealServer) Running() bool { return r.proc != nil && !r.proc.Wait(0) }

// Kill kills the real server's process (SIGKILL): its connections are
// reset and new ones refused.
func (r *RealServer) Kill() {
	t := r.l.t
	t.Helper()
	r.proc.Signal(syscall.SIGKILL)
	if !r.proc.Wait(10 * time.Second) {
		t.Fatalf("%s outlived SIGKILL", r.Name)
	}
}

// PowerOff takes the real server off the network without a word, as a
// host that loses power: nothing answers its connections or its checks.
func (r *RealServer) PowerOff() {
	t := r.l.t
	t.Helper()
	eth0, err := r.NS.NL.LinkByName("eth0")
	if err == nil {
		err = r.NS.NL.LinkSetDown(eth0)
	}
	if err != nil {
		t.Fatalf("%s's eth0 down: %v", r.Name, err)
	}
}

// ServeRealServer makes this program a real server of the lab when the
// lab started it so (RealServer.Start): it serves until a signal ends it
// and exits, never returning. Otherwise it returns at once. A program
// that uses the lab calls it first: the tests from TestMain, the demo from
// main.
func ServeRealServer() {
	name := os.Getenv(envRealServer)
	if name == "" {
		return
	}
	err := serve(name, os.Getenv(envLabDir))
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}

func serve(name, dir string) error {
	conf, err := serverTLS(dir)
	if err != nil {
		return err
	}
	// Every address of the namespace: the VIP and its own.
	ln, err := net.Listen("tcp4", fmt.Sprintf(":%d", ServicePort))
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path == "/healthz" {
				fmt.Fprintln(w, "ok")
				return
			}
			fmt.Fprintln(w, name)
		}),
		TLSConfig:   conf,
		ReadTimeout: time.Minute,
		// Long-lived connections idle for as long as a test or the demo.
		IdleTimeout: time.Hour,
		// Not HTTP/2: the client speaks HTTP/1.1, one request at a time.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		// A check that gives up mid-handshake is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-stop; srv.Close() }()
	if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	os.Exit(0)
	return nil
}
