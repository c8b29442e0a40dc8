package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultSocket is where directord listens and directorctl asks.
const DefaultSocket = "/run/directord/directord.sock"

// refusedMessage is the 403 answer to a peer that is not root.
const refusedMessage = "only root may use directord's control socket"

// maxBody bounds a request's body; a drain request is a few dozen bytes.
const maxBody = 64 << 10

// Listen listens on the Unix socket path for Serve. It creates the parent
// directory (0755) if missing and removes a stale socket left by a
// directord that died, but not a live one's: if a directord answers on
// path, Listen fails. The socket's mode is 0600 from the moment it
// exists, so only root can connect.
func Listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("control socket directory: %w", err)
		}
		// Not left to the umask: directorctl must be able to reach the
		// socket, whose own mode is what keeps others out.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("control socket directory: %w", err)
		}
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	// Bind gives the socket file the mode of the socket's inode, so
	// restricting it before the bind leaves no moment in which another
	// user could connect (Linux; elsewhere the Chmod below does it).
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = restrictBeforeBind(fd) }); cerr != nil {
			return cerr
		}
		return err
	}}
	ln, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// removeStale removes the socket file at path if nothing answers on it.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("control socket %s: exists and is not a socket; not removed", path)
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("control socket %s: another directord is running (it answers on this socket)", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("control socket %s: cannot tell whether another directord is running: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("control socket: remove a stale socket: %w", err)
	}
	return nil
}

// Server answers the control API on a Unix socket:
//
//	GET  /v1/status   Status
//	POST /v1/drain    {"real":"ADDR:PORT"}  → {} or an error
//	POST /v1/undrain  {"real":"ADDR:PORT"}  → {} or an error
//	POST /v1/reload   Reload, 200 if it succeeded and 422 if not
//	POST /v1/handover {"instance":"NAME"} → HandoverResult, 422 if a peer did not take over
//	POST /v1/resume   {"instance":"NAME"} → {} or an error
//	POST /v1/drain-director    → {}: every BGP route withdrawn
//	POST /v1/undrain-director  → {}: announced again where due
//
// Errors are {"error":"..."} with a 4xx code. Each connection's peer
// credentials (SO_PEERCRED) are checked: only root is served. Requests
// may arrive concurrently, so Backend's methods may be called from
// several goroutines at once.
type Server struct {
	Backend Backend
	Log     *slog.Logger // nil: no logs
	// AllowUID, if set, decides which users are served in place of the
	// rule that only root is. For tests.
	AllowUID func(uid uint32) bool
}

// Serve answers requests on ln until ctx ends, then closes ln, waits a
// little for requests in progress and removes the socket file. It
// returns nil when ctx ended and an error if ln failed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	log := s.logger()
	srv := &http.Server{
		Handler: http.HandlerFunc(s.serveHTTP),
		// The client is directorctl on the same host; anything slower is
		// stuck and should not hold a goroutine.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// A reload reads and checks the whole configuration first.
		WriteTimeout:   2 * time.Minute,
		IdleTimeout:    time.Minute,
		MaxHeaderBytes: 16 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			uid, err := peerUID(c)
			return context.WithValue(ctx, peerKey{}, peer{uid: uid, err: err})
		},
		DisableGeneralOptionsHandler: true,
	}
	var path string
	if a, ok := ln.Addr().(*net.UnixAddr); ok && a.Name != "" && a.Name[0] != '@' {
		path = a.Name
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-served:
		err = fmt.Errorf("control socket %s: %w", path, err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		cancel()
		<-served
	}
	ln.Close()
	if path != "" {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			log.Warn("control socket not removed", "socket", path, "err", rerr)
		}
	}
	return err
}

func (s *Server) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// peerKey keys a connection's peer in its requests' contexts.
type peerKey struct{}

// peer is the process at the other end of a connection.
type peer struct {
	uid uint32
	err error // credentials unreadable: refused
}

func (s *Server) allowed(uid uint32) bool {
	if s.AllowUID != nil {
		return s.AllowUID(uid)
	}
	return uid == 0
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	log := s.logger()
	p, ok := r.Context().Value(peerKey{}).(peer)
	switch {
	case !ok:
		p.err = errors.New("not a connection accepted by Serve")
		fallthrough
	case p.err != nil:
		log.Warn("control socket: refused a client whose credentials cannot be read", "err", p.err)
		refuse(w)
		return
	case !s.allowed(p.uid):
		log.Warn("control socket: refused a client (only root may use it)", "uid", p.uid, "method", r.Method, "path", r.URL.Path)
		refuse(w)
		return
	}
	switch r.URL.Path {
	case "/v1/status":
		if method(w, r, http.MethodGet) {
			writeJSON(w, http.StatusOK, s.Backend.Status())
		}
	case "/v1/drain":
		if method(w, r, http.MethodPost) {
			s.drain(w, r, p.uid, true)
		}
	case "/v1/undrain":
		if method(w, r, http.MethodPost) {
			s.drain(w, r, p.uid, false)
		}
	case "/v1/reload":
		if method(w, r, http.MethodPost) {
			s.reload(w, p.uid)
		}
	case "/v1/drain-director", "/v1/undrain-director":
		if method(w, r, http.MethodPost) {
			s.drainDirector(w, r, p.uid, r.URL.Path == "/v1/drain-director")
		}
	case "/v1/handover", "/v1/resume":
		if method(w, r, http.MethodPost) {
			s.handover(w, r, p.uid, r.URL.Path == "/v1/handover")
		}
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such path %q", r.URL.Path))
	}
}

func refuse(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusForbidden, refusedMessage)
}

// method answers 405 unless r's method is m.
func method(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method == m {
		return true
	}
	w.Header().Set("Allow", m)
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s", r.URL.Path, m, r.Method))
	return false
}

// DrainRequest is the body of POST /v1/drain and /v1/undrain.
type DrainRequest struct {
	Real string `json:"real"` // ADDR:PORT, [ADDR]:PORT for IPv6
}

func (s *Server) drain(w http.ResponseWriter, r *http.Request, uid uint32, on bool) {
	var req DrainRequest
	if code, err := decodeBody(w, r, &req); err != nil {
		writeError(w, code, err.Error())
		return
	}
	addr, err := netip.ParseAddrPort(req.Real)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("real server %q: want ADDR:PORT ([ADDR]:PORT for IPv6)", req.Real))
		return
	}
	real := addr.String()
	// The Backend's one documented failure is a real server it does not
	// have; any other (no virtual servers at all) amounts to the same.
	if err := s.Backend.Drain(real, on); err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	s.logger().Info("control: drain", "real_server", real, "drained", on, "uid", uid)
	writeJSON(w, http.StatusOK, struct{}{})
}

// decodeBody reads r's body, one JSON object of at most maxBody bytes,
// into v; the error comes with the status code to answer.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) (int, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("more than one JSON value")
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return http.StatusBadRequest, errors.New(`empty request body; want {"real":"ADDR:PORT"}`)
	default:
		return http.StatusBadRequest, fmt.Errorf("request body: %v", err)
	}
}

func (s *Server) handover(w http.ResponseWriter, r *http.Request, uid uint32, on bool) {
	h, ok := s.Backend.(Handoverer)
	if !ok {
		writeError(w, http.StatusNotFound, "this directord has no hand-over")
		return
	}
	var req HandoverRequest
	if code, err := decodeBody(w, r, &req); err != nil {
		writeError(w, code, err.Error())
		return
	}
	s.logger().Info("control: hand-over", "instance", req.Instance, "on", on, "uid", uid)
	if !on {
		if err := h.Resume(req.Instance); err != nil {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
		return
	}
	res, err := h.Handover(r.Context(), req.Instance)
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	code := http.StatusOK
	for _, i := range res.Instances {
		if !i.OK {
			code = http.StatusUnprocessableEntity
		}
	}
	writeJSON(w, code, res)
}

func (s *Server) drainDirector(w http.ResponseWriter, r *http.Request, uid uint32, on bool) {
	d, ok := s.Backend.(DirectorDrainer)
	if !ok {
		writeError(w, http.StatusNotFound, "this directord runs no BGP speaker (no bgp block in global_defs)")
		return
	}
	if err := d.DrainDirector(r.Context(), on); err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	s.logger().Info("control: drain-director", "drained", on, "uid", uid)
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) reload(w http.ResponseWriter, uid uint32) {
	r := s.Backend.Reload()
	s.logger().Info("control: reload", "ok", r.OK, "uid", uid)
	code := http.StatusOK
	if !r.OK {
		code = http.StatusUnprocessableEntity
	}
	writeJSON(w, code, r)
}

// errorBody is every error's answer.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: fmt.Sprintf("encode the answer: %v", err)})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
