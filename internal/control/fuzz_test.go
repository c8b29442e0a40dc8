package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/directord/directord/internal/fuzztest"
)

// handoverBackend is fakeBackend with hand-overs of the one instance VI_1.
type handoverBackend struct{ fakeBackend }

func (b *handoverBackend) Handover(_ context.Context, instance string) (HandoverResult, error) {
	if instance != "" && instance != "VI_1" {
		return HandoverResult{}, errors.New("no instance " + instance)
	}
	return HandoverResult{Instances: []HandoverInstance{{Name: "VI_1", OK: true}}}, nil
}

func (b *handoverBackend) Resume(instance string) error {
	if instance != "" && instance != "VI_1" {
		return errors.New("no instance " + instance)
	}
	return nil
}

// controlRequests are requests with the answer they must get. FuzzControl
// asserts them whenever it meets them, so a target whose requests no longer
// reach the handlers fails at once.
var controlRequests = []struct {
	name, request string
	root          bool
	code          int
	body          string // in the answer
}{
	{"status", "GET /v1/status HTTP/1.1\r\nHost: d\r\n\r\n", true, 200, `"pid":4242`},
	{"drain", "POST /v1/drain HTTP/1.1\r\nHost: d\r\nContent-Length: 26\r\n\r\n{\"real\":\"192.0.2.21:443\"}\n", true, 200, "{}"},
	{"undrain chunked", "POST /v1/undrain HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n19\r\n{\"real\":\"192.0.2.21:443\"}\r\n0\r\n\r\n", true, 200, "{}"},
	{"drain unknown", "POST /v1/drain HTTP/1.1\r\nHost: d\r\nContent-Length: 21\r\n\r\n{\"real\":\"[::1]:8080\"}", true, 404, "no virtual server"},
	{"drain bad address", "POST /v1/drain HTTP/1.1\r\nHost: d\r\nContent-Length: 12\r\n\r\n{\"real\":\"x\"}", true, 400, "want ADDR:PORT"},
	{"drain two values", "POST /v1/drain HTTP/1.1\r\nHost: d\r\nContent-Length: 4\r\n\r\n{}{}", true, 400, "more than one"},
	{"reload", "POST /v1/reload HTTP/1.1\r\nHost: d\r\n\r\n", true, 200, `"ok":true`},
	{"handover", "POST /v1/handover HTTP/1.1\r\nHost: d\r\nContent-Length: 19\r\n\r\n{\"instance\":\"VI_1\"}", true, 200, `"VI_1"`},
	{"resume unknown", "POST /v1/resume HTTP/1.1\r\nHost: d\r\nContent-Length: 16\r\n\r\n{\"instance\":\"X\"}", true, 404, "no instance"},
	{"wrong method", "DELETE /v1/status HTTP/1.1\r\nHost: d\r\n\r\n", true, 405, "takes GET"},
	{"no such path", "GET /v2/x HTTP/1.1\r\nHost: d\r\n\r\n", true, 404, "no such path"},
	{"not root", "GET /v1/status HTTP/1.1\r\nHost: d\r\n\r\n", false, 403, refusedMessage},
}

// FuzzControl feeds the control API any request, as a client on the socket
// would write it (root or not): the server must not panic or hang, and it
// answers every request with JSON, an error with a 4xx code and a message.
func FuzzControl(f *testing.F) {
	for _, c := range controlRequests {
		f.Add([]byte(c.request), c.root)
	}
	f.Add([]byte("POST /v1/drain HTTP/1.1\r\nHost: d\r\nContent-Length: 70000\r\n\r\n"+strings.Repeat(" ", 70000)), true)
	f.Add([]byte("POST /v1/drain HTTP/1.1\r\nHost: d\r\nContent-Length: 30\r\n\r\n{\"real\":\"1.2.3.4:5\",\"extra\":1}"), true)
	f.Fuzz(func(t *testing.T, request []byte, root bool) {
		fuzztest.Bound(t)
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(request)))
		if err != nil {
			for _, c := range controlRequests {
				if c.request == string(request) {
					t.Fatalf("known request %q does not parse: %v", c.name, err)
				}
			}
			return
		}
		uid := uint32(0)
		if !root {
			uid = 1000
		}
		req = req.WithContext(context.WithValue(req.Context(), peerKey{}, peer{uid: uid}))
		b := &handoverBackend{fakeBackend{status: sampleStatus(), reals: map[string]bool{"192.0.2.21:443": true}, reload: Reload{OK: true}}}
		w := httptest.NewRecorder()
		(&Server{Backend: b}).serveHTTP(w, req)
		body := w.Body.Bytes()
		if !json.Valid(body) || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%d answer is not JSON: %q", w.Code, body)
		}
		if w.Code >= 400 {
			var e errorBody
			if json.Unmarshal(body, &e) != nil || e.Error == "" || w.Code >= 500 {
				t.Fatalf("error %d without a message, or not the client's: %q", w.Code, body)
			}
		}
		for _, c := range controlRequests {
			if c.request == string(request) && c.root == root && (w.Code != c.code || !strings.Contains(string(body), c.body)) {
				t.Fatalf("known request %q: %d %q, want %d with %q", c.name, w.Code, body, c.code, c.body)
			}
		}
	})
}
