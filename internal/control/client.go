package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Errors of Client's methods, to compare with errors.Is.
var (
	// ErrNotRunning: no directord answers on the socket.
	ErrNotRunning = errors.New("directord is not running")
	// ErrPermission: the socket or directord refused this user.
	ErrPermission = errors.New("permission denied")
	// ErrReloadFailed: directord read the configuration again and
	// rejected it; it goes on with the one it had.
	ErrReloadFailed = errors.New("reload failed")
)

// Error is an error the control API answered with.
type Error struct {
	StatusCode int    // HTTP status
	Message    string // the answer's "error"
}

func (e *Error) Error() string { return e.Message }

// maxAnswer bounds an answer's body: a status of thousands of real
// servers is a few megabytes.
const maxAnswer = 64 << 20

// Client asks a directord through its control socket.
type Client struct {
	path string
	hc   *http.Client
}

// Dial returns a Client of the control socket at path. It connects on
// each request, not now, so a directord that is not running shows in the
// first method's error.
func Dial(path string) *Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns:       1,
		IdleConnTimeout:    30 * time.Second,
		DisableCompression: true,
	}
	// One minute covers a reload of a large configuration.
	return &Client{path: path, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// Status returns directord's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	code, body, err := c.call(ctx, http.MethodGet, "/v1/status", nil)
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, answerError(code, body)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("status: decode the answer: %w", err)
	}
	return st, nil
}

// Drain sets real server real (ADDR:PORT) to weight 0 in every virtual
// server that has it, or gives it its weight back (on false). Its
// established connections continue.
func (c *Client) Drain(ctx context.Context, real string, on bool) error {
	path := "/v1/undrain"
	if on {
		path = "/v1/drain"
	}
	code, body, err := c.call(ctx, http.MethodPost, path, DrainRequest{Real: real})
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return answerError(code, body)
	}
	return nil
}

// DrainDirector withdraws every BGP route of the director (on), or lets
// them be announced again; it returns once they are.
func (c *Client) DrainDirector(ctx context.Context, on bool) error {
	path := "/v1/undrain-director"
	if on {
		path = "/v1/drain-director"
	}
	code, body, err := c.call(ctx, http.MethodPost, path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return answerError(code, body)
	}
	return nil
}

// Reload has directord read its configuration file again, as SIGHUP does.
// A configuration that directord rejected is an error that wraps
// ErrReloadFailed with the Reload's message (which names file:line); the
// Reload is returned in both cases.
func (c *Client) Reload(ctx context.Context) (Reload, error) {
	var r Reload
	code, body, err := c.call(ctx, http.MethodPost, "/v1/reload", nil)
	if err != nil {
		return r, err
	}
	if code != http.StatusOK && code != http.StatusUnprocessableEntity {
		return r, answerError(code, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("reload: decode the answer: %w", err)
	}
	if !r.OK {
		return r, fmt.Errorf("%w: %s", ErrReloadFailed, r.Error)
	}
	return r, nil
}

// Handover makes this director give up mastership of the instance (every
// instance for ""), and waits until a peer has taken over; a peer that
// did not is an error, with the result.
func (c *Client) Handover(ctx context.Context, instance string) (HandoverResult, error) {
	var r HandoverResult
	code, body, err := c.call(ctx, http.MethodPost, "/v1/handover", HandoverRequest{Instance: instance})
	if err != nil {
		return r, err
	}
	if code != http.StatusOK && code != http.StatusUnprocessableEntity {
		return r, answerError(code, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("handover: decode the answer: %w", err)
	}
	if code != http.StatusOK {
		return r, errors.New("handover: no peer took over")
	}
	return r, nil
}

// Resume lets the instance (every instance for "") compete again.
func (c *Client) Resume(ctx context.Context, instance string) error {
	code, body, err := c.call(ctx, http.MethodPost, "/v1/resume", HandoverRequest{Instance: instance})
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return answerError(code, body)
	}
	return nil
}

// call sends a request and returns the answer's code and body; the error
// is for a request that got no answer, or a refusal.
func (c *Client) call(ctx context.Context, method, path string, in any) (int, []byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, nil, err
		}
		body = bytes.NewReader(b)
	}
	// The host is a placeholder: every connection goes to the socket.
	req, err := http.NewRequestWithContext(ctx, method, "http://directord"+path, body)
	if err != nil {
		return 0, nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, c.connError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden {
		return 0, nil, c.permissionError()
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, nil, fmt.Errorf("control socket %s: read the answer: %w", c.path, err)
	}
	return resp.StatusCode, b, nil
}

func (c *Client) connError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (no control socket at %s)", ErrNotRunning, c.path)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w (nothing answers on the control socket %s)", ErrNotRunning, c.path)
	case errors.Is(err, fs.ErrPermission):
		return c.permissionError()
	}
	return fmt.Errorf("control socket %s: %w", c.path, err)
}

func (c *Client) permissionError() error {
	return fmt.Errorf("%w: only root may use directord's control socket %s", ErrPermission, c.path)
}

// answerError is the error of an answer other than the one expected.
func answerError(code int, body []byte) error {
	var e errorBody
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return &Error{StatusCode: code, Message: e.Error}
	}
	return &Error{StatusCode: code, Message: fmt.Sprintf("unexpected answer: %d %s", code, http.StatusText(code))}
}
