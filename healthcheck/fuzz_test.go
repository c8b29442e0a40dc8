package healthcheck

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/fuzztest"
)

// answerConn is a connection whose server's answer is fixed bytes; what the
// checker sends is thrown away.
type answerConn struct{ r *bytes.Reader }

func (c *answerConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *answerConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *answerConn) Close() error                     { return nil }
func (c *answerConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *answerConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *answerConn) SetDeadline(time.Time) error      { return nil }
func (c *answerConn) SetReadDeadline(time.Time) error  { return nil }
func (c *answerConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzBody is the body whose MD5 the fuzzed checker's URL expects when it
// checks a digest.
const fuzzBody = "hello, world\n"

// httpAnswers are server answers with what the check must make of them:
// ok (the URL passes) and keep (the connection may carry the next
// request, with reuse_connection). FuzzHTTPAnswer asserts them whenever it
// meets them, so a reader that stops reaching the body fails at once.
var httpAnswers = []struct {
	name, answer string
	digest       bool // the URL checks fuzzBody's digest
	ok, keep     bool
	reason       string // in the result's reason when not ok
}{
	{name: "200 with a length and the digest", digest: true, ok: true, keep: true,
		answer: "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\n" + fuzzBody},
	// keepalived hashes the bytes after the head as they came, chunk
	// framing included: a digest of the de-chunked body does not match.
	{name: "200 chunked, the digest of the de-chunked body", digest: true, reason: "digest",
		answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\nhello, \r\n6\r\nworld\n\r\n0\r\nX-Trailer: t\r\n\r\n"},
	{name: "200 to the end of the stream", digest: true, ok: true,
		answer: "HTTP/1.0 200 OK\r\nServer: s\r\n\r\n" + fuzzBody},
	{name: "200 without a digest", ok: true, keep: true,
		answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno"},
	{name: "wrong digest", digest: true, reason: "digest",
		answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"},
	{name: "500", reason: "status 500",
		answer: "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops"},
	{name: "Connection: close", ok: true,
		answer: "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"},
}

// fuzzURL is the URL the fuzzed checker asks for: 200-299 pass.
func fuzzURL(digest bool) *config.URL {
	u := &config.URL{Path: "/", StatusCodes: []config.StatusRange{{Min: 200, Max: 299}}}
	if digest {
		sum := md5.Sum([]byte(fuzzBody))
		u.Digest = hex.EncodeToString(sum[:])
	}
	return u
}

// FuzzHTTPAnswer feeds HTTP_GET and SSL_GET's reader of answers (status
// line, headers, plain, chunked and unbounded bodies, the digest) any bytes
// as the server's answer. It must not panic or hang; a URL that passes has
// a result without a reason, one that fails says why.
func FuzzHTTPAnswer(f *testing.F) {
	for _, a := range httpAnswers {
		f.Add([]byte(a.answer), a.digest)
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n"), true)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\nab"), true)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"), false)
	f.Add([]byte("HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\n"), false)
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), false)
	f.Add([]byte("HTTP/9.9 2000 What\r\n\r\n"), false)
	f.Add([]byte("garbage\r\n\r\n"), false)
	f.Fuzz(func(t *testing.T, answer []byte, digest bool) {
		fuzztest.Bound(t)
		c := &config.Checker{CheckerSpec: &config.CheckerSpec{Type: config.CheckHTTPGet, ConnectTimeout: time.Second,
			HTTP: &config.HTTPCheck{URLs: []*config.URL{fuzzURL(digest)}, HTTPProtocol: "1.1", ReuseConnection: time.Minute}}}
		p := mustHTTP(t, c, &config.RealServer{}, "")
		res, ok, keep, _ := p.exchange(t.Context(), &answerConn{r: bytes.NewReader(answer)}, c.HTTP.URLs[0], "/", "h", time.Now())
		if ok && res.Outcome == Down {
			t.Fatalf("passed with a failure %q", res.Reason)
		}
		if !ok && res.Reason == "" {
			t.Fatalf("failed without a reason: %+v", res)
		}
		// keepalived's own reading (no reuse_connection, the default): the
		// answer up to the server's close, then judged.
		c0 := *c
		h0 := *c.HTTP
		h0.ReuseConnection = 0
		c0.HTTP = &h0
		p0 := mustHTTP(t, &c0, &config.RealServer{}, "")
		res0, ok0, _, _ := p0.exchange(t.Context(), &answerConn{r: bytes.NewReader(answer)}, h0.URLs[0], "/", "h", time.Now())
		if (ok0 && res0.Outcome == Down) || (!ok0 && res0.Reason == "") {
			t.Fatalf("keepalived's reading: ok %v with %+v", ok0, res0)
		}
		for _, a := range httpAnswers {
			if a.answer != string(answer) || a.digest != digest {
				continue
			}
			if ok != a.ok || keep != a.keep || (!a.ok && !strings.Contains(res.Reason, a.reason)) {
				t.Fatalf("known answer %q: ok %v keep %v %q, want ok %v keep %v %q", a.name, ok, keep, res.Reason, a.ok, a.keep, a.reason)
			}
		}
	})
}
