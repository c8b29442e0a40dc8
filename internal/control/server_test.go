package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/directord/directord/internal/controltest"
)

// fakeBackend is a directord with a fixed status, the real servers in
// reals, and the outcome of the next reload.
type fakeBackend struct {
	mu      sync.Mutex
	status  Status
	reals   map[string]bool // known real servers
	drained map[string]bool
	reload  Reload
	calls   []string
}

func (f *fakeBackend) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "status")
	return f.status
}

func (f *fakeBackend) Drain(real string, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("drain %s %v", real, on))
	if !f.reals[real] {
		return fmt.Errorf("%s: no virtual server has this real server", real)
	}
	if f.drained == nil {
		f.drained = map[string]bool{}
	}
	f.drained[real] = on
	return nil
}

func (f *fakeBackend) Reload() Reload {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "reload")
	return f.reload
}

func (f *fakeBackend) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// serve runs srv on a socket in a directory of its own that Listen
// creates, until the test ends; it returns the socket's path and the
// server's logs.
func serve(t *testing.T, srv *Server) (string, *controltest.Logs) {
	t.Helper()
	logs := &controltest.Logs{}
	srv.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	path := filepath.Join(t.TempDir(), "run", "directord.sock")
	controltest.Serve(t, path, Listen, srv.Serve)
	return path, logs
}

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

func sampleStatus() Status {
	return Status{
		Version:        "1.2.3",
		PID:            4242,
		Started:        t0,
		ConfigFile:     "/etc/keepalived/keepalived.conf",
		LastReload:     &Reload{At: t0.Add(time.Hour), OK: false, Error: "/etc/keepalived/keepalived.conf:12: unknown keyword \"lb_algoo\""},
		LastGoodReload: t0.Add(30 * time.Minute),
		ReloadsOK:      1,
		ReloadsFailed:  1,
		Instances: []Instance{{
			Name: "VI_1", VRID: 51, Interface: "eth0", Version: 3, State: "MASTER", Since: t0,
			Priority: 150, EffectivePriority: 140, MasterAddr: "192.0.2.10", VIPs: []string{"192.0.2.1/24", "2001:db8::1/64"},
			AdvertsSent: 3600, AdvertsReceived: 2, Transitions: 2, Drops: map[string]uint64{"auth": 1},
		}},
		VirtualServers: []VirtualServer{{
			Name: "192.0.2.1 443", Position: "keepalived.conf:30", Protocol: "TCP", Scheduler: "wrr", Forwarding: "DR", QuorumUp: true,
			Reals: []Real{
				{Addr: "10.0.0.1:443", Alive: true, Weight: 3, EffectiveWeight: 3, Checks: []Check{{Type: "SSL_GET", Result: "up", Latency: 1200 * time.Microsecond, At: t0.Add(2 * time.Hour)}}},
				{Addr: "10.0.0.2:443", Alive: true, Drained: true, Weight: 1, EffectiveWeight: 0},
			},
		}},
		Drained: []string{"10.0.0.2:443"},
		IPVS:    IPVS{Operations: 12, Errors: 1, LastSync: t0.Add(2 * time.Hour)},
		BGP: &BGP{LocalAS: 65010, RouterID: "10.0.0.11",
			Neighbors: []BGPNeighbor{{Address: "10.0.0.1", RemoteAS: 65000, State: "established", Since: t0, BFD: "up", PrefixesSent: 1}},
			Addresses: []BGPAddress{{Prefix: "192.0.2.1/32", Announced: true, Reason: "serving", Detail: "every virtual server of the address is programmed and has quorum", Dev: "lo", Since: t0}}},
	}
}

func TestStatusRoundTrip(t *testing.T) {
	want := sampleStatus()
	f := &fakeBackend{status: want}
	path, _ := serve(t, &Server{Backend: f})
	got, err := Dial(path).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestDrain(t *testing.T) {
	tests := []struct {
		name     string
		real     string
		on       bool
		wantCode int    // 0: no error
		wantMsg  string // in the error
		wantCall string // what the backend was asked, "" for nothing
	}{
		{name: "drain", real: "10.0.0.1:80", on: true, wantCall: "drain 10.0.0.1:80 true"},
		{name: "undrain", real: "10.0.0.1:80", on: false, wantCall: "drain 10.0.0.1:80 false"},
		{name: "IPv6 in canonical form", real: "[2001:DB8::0:1]:80", on: true, wantCall: "drain [2001:db8::1]:80 true"},
		{name: "unknown real server", real: "10.0.0.9:80", on: true, wantCode: 404,
			wantMsg: "10.0.0.9:80: no virtual server has this real server", wantCall: "drain 10.0.0.9:80 true"},
		{name: "no port", real: "10.0.0.1", on: true, wantCode: 400, wantMsg: `real server "10.0.0.1": want ADDR:PORT`},
		{name: "IPv6 without brackets", real: "2001:db8::1:80", on: false, wantCode: 400, wantMsg: "want ADDR:PORT ([ADDR]:PORT for IPv6)"},
		{name: "empty", real: "", on: true, wantCode: 400, wantMsg: `real server ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeBackend{reals: map[string]bool{"10.0.0.1:80": true, "[2001:db8::1]:80": true}}
			path, _ := serve(t, &Server{Backend: f})
			err := Dial(path).Drain(context.Background(), tt.real, tt.on)
			var apiErr *Error
			switch {
			case tt.wantCode == 0 && err != nil:
				t.Errorf("Drain(%q, %v) = %v, want no error", tt.real, tt.on, err)
			case tt.wantCode != 0 && !errors.As(err, &apiErr):
				t.Errorf("Drain(%q, %v) = %v, want an *Error %d", tt.real, tt.on, err, tt.wantCode)
			case tt.wantCode != 0 && (apiErr.StatusCode != tt.wantCode || !strings.Contains(apiErr.Message, tt.wantMsg)):
				t.Errorf("Drain(%q, %v) = %d %q, want %d with %q", tt.real, tt.on, apiErr.StatusCode, apiErr.Message, tt.wantCode, tt.wantMsg)
			}
			var want []string
			if tt.wantCall != "" {
				want = []string{tt.wantCall}
			}
			if diff := cmp.Diff(want, f.called()); diff != "" {
				t.Errorf("backend calls (-want +got):\n%s", diff)
			}
		})
	}
}

// drainingBackend is a fakeBackend that runs BGP.
type drainingBackend struct {
	*fakeBackend
	drained bool
}

func (d *drainingBackend) DrainDirector(_ context.Context, on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, fmt.Sprintf("drain-director %v", on))
	d.drained = on
	return nil
}

func TestDrainDirector(t *testing.T) {
	d := &drainingBackend{fakeBackend: &fakeBackend{}}
	path, _ := serve(t, &Server{Backend: d})
	c := Dial(path)
	if err := c.DrainDirector(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := c.DrainDirector(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"drain-director true", "drain-director false"}, d.called()); diff != "" {
		t.Errorf("backend calls (-want +got):\n%s", diff)
	}
	// A directord without BGP says so.
	path, _ = serve(t, &Server{Backend: &fakeBackend{}})
	err := Dial(path).DrainDirector(context.Background(), true)
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Message, "no BGP speaker") {
		t.Errorf("without BGP: %v", err)
	}
}

func TestReload(t *testing.T) {
	at := t0.Add(time.Hour)
	tests := []struct {
		name    string
		reload  Reload
		wantErr string // "" for none
	}{
		{name: "OK", reload: Reload{At: at, OK: true}},
		{name: "failed", reload: Reload{At: at, Error: "/etc/keepalived/keepalived.conf:12: unknown keyword \"lb_algoo\""},
			wantErr: "reload failed: /etc/keepalived/keepalived.conf:12: unknown keyword \"lb_algoo\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeBackend{reload: tt.reload}
			path, logs := serve(t, &Server{Backend: f})
			got, err := Dial(path).Reload(context.Background())
			if diff := cmp.Diff(tt.reload, got); diff != "" {
				t.Errorf("reload (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Reload: %v, want no error", err)
			case tt.wantErr != "" && (!errors.Is(err, ErrReloadFailed) || err.Error() != tt.wantErr):
				t.Errorf("Reload: %v, want %q wrapping ErrReloadFailed", err, tt.wantErr)
			}
			if want := fmt.Sprintf("ok=%v uid=0", tt.reload.OK); !strings.Contains(logs.String(), want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		})
	}
}

// TestHTTP checks the answers to requests directorctl does not make.
func TestHTTP(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantError                string // the JSON answer's error
		wantAllow                string
	}{
		{name: "unknown path", method: "GET", path: "/v1/nope", wantCode: 404, wantError: `no such path "/v1/nope"`},
		{name: "root", method: "GET", path: "/", wantCode: 404, wantError: `no such path "/"`},
		{name: "status by POST", method: "POST", path: "/v1/status", wantCode: 405, wantError: "/v1/status takes GET, not POST", wantAllow: "GET"},
		{name: "drain by GET", method: "GET", path: "/v1/drain", wantCode: 405, wantError: "/v1/drain takes POST, not GET", wantAllow: "POST"},
		{name: "reload by PUT", method: "PUT", path: "/v1/reload", wantCode: 405, wantError: "/v1/reload takes POST, not PUT", wantAllow: "POST"},
		{name: "empty body", method: "POST", path: "/v1/drain", wantCode: 400, wantError: `empty request body; want {"real":"ADDR:PORT"}`},
		{name: "unknown field", method: "POST", path: "/v1/undrain", body: `{"real":"10.0.0.1:80","weight":3}`, wantCode: 400,
			wantError: `request body: json: unknown field "weight"`},
		{name: "two values", method: "POST", path: "/v1/drain", body: `{"real":"10.0.0.1:80"}{}`, wantCode: 400,
			wantError: "request body: more than one JSON value"},
		{name: "not JSON", method: "POST", path: "/v1/drain", body: `real=10.0.0.1:80`, wantCode: 400,
			wantError: "request body: invalid character 'r' looking for beginning of value"},
		{name: "too big", method: "POST", path: "/v1/drain", body: `{"real":"` + strings.Repeat("1", maxBody) + `"}`, wantCode: 413,
			wantError: "request body over 65536 bytes"},
	}
	f := &fakeBackend{reals: map[string]bool{"10.0.0.1:80": true}}
	path, _ := serve(t, &Server{Backend: f})
	hc := Dial(path).hc
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, "http://directord"+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Errorf("%s %s: %d, want %d", tt.method, tt.path, resp.StatusCode, tt.wantCode)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q, want application/json", got)
			}
			if got := resp.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow %q, want %q", got, tt.wantAllow)
			}
			e := answerError(resp.StatusCode, body).(*Error)
			if e.Message != tt.wantError {
				t.Errorf("error %q, want %q (body %s)", e.Message, tt.wantError, body)
			}
		})
	}
	if calls := f.called(); len(calls) > 0 {
		t.Errorf("the backend was asked %q by bad requests", calls)
	}
}

// TestRefused: a peer that AllowUID does not let in (here root, in
// process) gets 403, which the client reports as a permission error, and
// the refusal is logged with its uid.
func TestRefused(t *testing.T) {
	f := &fakeBackend{status: sampleStatus()}
	path, logs := serve(t, &Server{Backend: f, AllowUID: func(uid uint32) bool { return false }})
	_, err := Dial(path).Status(context.Background())
	want := "permission denied: only root may use directord's control socket " + path
	if !errors.Is(err, ErrPermission) || err.Error() != want {
		t.Errorf("Status: %v, want %q wrapping ErrPermission", err, want)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "uid=0") {
		t.Errorf("the refusal is not logged at WARN with uid=0:\n%s", l)
	}
	if calls := f.called(); len(calls) > 0 {
		t.Errorf("the backend was asked %q for a refused peer", calls)
	}
}

// TestAllowUID: AllowUID lets in whom it says.
func TestAllowUID(t *testing.T) {
	var asked []uint32
	var mu sync.Mutex
	f := &fakeBackend{status: sampleStatus()}
	path, _ := serve(t, &Server{Backend: f, AllowUID: func(uid uint32) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, uid)
		return true
	}})
	if _, err := Dial(path).Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []uint32{uint32(os.Geteuid())}; !cmp.Equal(asked, want) {
		t.Errorf("AllowUID asked about %v, want %v", asked, want)
	}
}

func TestListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "directord")
	path := filepath.Join(dir, "directord.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode(), fs.ModeSocket|0o600; got != want {
		t.Errorf("socket mode %v, want %v", got, want)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := di.Mode(), fs.ModeDir|0o755; got != want {
		t.Errorf("directory mode %v, want %v", got, want)
	}

	// A second directord finds the first one answering.
	_, err = Listen(path)
	if want := "another directord is running"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Listen on a live socket: %v, want an error with %q", err, want)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the live socket is gone: %v", err)
	}
}

func TestListenStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "directord.sock")
	// A directord that died leaves its socket behind.
	old, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	old.Close()

	_, err = Dial(path).Status(context.Background())
	want := "directord is not running (nothing answers on the control socket " + path + ")"
	if !errors.Is(err, ErrNotRunning) || err.Error() != want {
		t.Errorf("Status on a stale socket: %v, want %q", err, want)
	}

	ln, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	ln.Close()
}

func TestListenNotSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "directord.sock")
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(path)
	if want := "exists and is not a socket"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Listen over a file: %v, want an error with %q", err, want)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep me" {
		t.Errorf("the file was touched: %q, %v", b, err)
	}
}

// TestServeEnds: Serve returns when its context ends and removes the
// socket.
func TestServeEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "directord.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Backend: &fakeBackend{}}).Serve(ctx, ln) }()
	c := Dial(path)
	if _, err := c.Status(context.Background()); err != nil { // a connection left idle
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket is still there: %v", err)
	}
	_, err = c.Status(context.Background())
	want := "directord is not running (no control socket at " + path + ")"
	if !errors.Is(err, ErrNotRunning) || err.Error() != want {
		t.Errorf("Status after Serve: %v, want %q", err, want)
	}
}

func TestNotRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none", "directord.sock")
	c := Dial(path)
	want := "directord is not running (no control socket at " + path + ")"
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrNotRunning) || err.Error() != want {
		t.Errorf("Status: %v, want %q", err, want)
	}
	if err := c.Drain(context.Background(), "10.0.0.1:80", true); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Drain: %v, want ErrNotRunning", err)
	}
	if _, err := c.Reload(context.Background()); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Reload: %v, want ErrNotRunning", err)
	}
}
