package healthcheck

import (
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
)

const okHead = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"

// resetConn closes c with a reset (TCP RST), under its TLS if any.
func resetConn(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
}

// answerCase is a raw server's way of answering GET / (serve) and what
// a checker of type typ must make of it.
type answerCase struct {
	name   string
	typ    string
	serve  func(net.Conn, string)
	want   Outcome
	reason string
}

// run probes a raw server that answers as tt says with a checker whose
// connect_timeout is timeout, checks the outcome and returns the result.
func (tt answerCase) run(t *testing.T, timeout time.Duration) Result {
	t.Helper()
	s := newRawServerOf(t, tt.typ, tt.serve)
	c, rs := rawCheckerOf(tt.typ, s, url("/"))
	c.ConnectTimeout = timeout
	r := probe(t, mustHTTP(t, c, rs, ""))
	if r.Outcome != tt.want || r.Reason != tt.reason {
		t.Errorf("%s %q, want %s %q", r.Outcome, r.Reason, tt.want, tt.reason)
	}
	return r
}

// TestAnswerCutAfterTheHead: an answer whose head passes and whose body
// stalls fails, for HTTP_GET ("Timeout HTTP read") and SSL_GET ("Timeout
// SSL read"); one reset after its head fails HTTP_GET ("Read error") and
// passes SSL_GET, whose ssl_read_thread judges what came before a reset
// as before a close. Without a digest, as with one.
func TestAnswerCutAfterTheHead(t *testing.T) {
	stall := func(c net.Conn, req string) { c.Write([]byte(okHead + "partial")) } // held open
	reset := func(c net.Conn, req string) {
		c.Write([]byte(okHead + "partial"))
		time.Sleep(50 * time.Millisecond) // the head and the start of the body on their way first
		resetConn(c)
	}
	tests := []answerCase{
		{"HTTP_GET stalls", "HTTP_GET", stall, Down, "GET /: body: timed out"},
		{"SSL_GET stalls", "SSL_GET", stall, Down, "GET /: body: timed out"},
		{"HTTP_GET reset", "HTTP_GET", reset, Down, "GET /: body: connection reset by peer"},
		{"SSL_GET reset", "SSL_GET", reset, Up, "all URLs answered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Long enough for a TLS handshake under -race on a loaded
			// machine: the stall is what must time out.
			r := tt.run(t, time.Second)
			if r.Silent {
				t.Error("silent: the server answered")
			}
		})
	}
}

// chunked is a chunked answer, and genhash's digest of it: keepalived
// hashes the raw bytes after the head, chunk sizes and all (genhash
// 2.2.7 printed fc3946cc674492e3e09d9e45c4c09023 for this answer).
const (
	chunked       = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
	chunkedDigest = "fc3946cc674492e3e09d9e45c4c09023"
)

// TestDigestAsKeepalived: the digest is the MD5 of the raw bytes after
// the head, as keepalived and genhash compute it: a chunked body with
// its chunk sizes (under http_protocol 1.1, where servers chunk), a body
// up to its Content-Length and no further.
func TestDigestAsKeepalived(t *testing.T) {
	raw := md5.Sum([]byte(chunked[strings.Index(chunked, "\r\n\r\n")+4:]))
	if got := hex.EncodeToString(raw[:]); got != chunkedDigest {
		t.Fatalf("the test's own digest %s, want genhash's %s", got, chunkedDigest)
	}
	hello := md5.Sum([]byte("hello"))
	tests := []struct {
		name, answer, digest string
		reuse                time.Duration
		want                 Outcome
	}{
		{"chunked", chunked, chunkedDigest, 0, Up},
		{"chunked, reuse_connection", chunked, chunkedDigest, time.Hour, Up},
		{"Content-Length bounds it", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello and more", hex.EncodeToString(hello[:]), 0, Up},
		{"no Content-Length: to the end", "HTTP/1.1 200 OK\r\n\r\nhello and more", hex.EncodeToString(hello[:]), 0, Down},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRawServer(t, "tcp4", "127.0.0.1:0", replyWith(tt.answer))
			u := url("/")
			u.Digest = tt.digest
			c, rs := rawChecker(s, u)
			c.HTTP.HTTPProtocol, c.HTTP.ReuseConnection = "1.1", tt.reuse
			p := mustHTTP(t, c, rs, "")
			defer p.Close()
			if r := probe(t, p); r.Outcome != tt.want {
				t.Errorf("%s %q, want %s", r.Outcome, r.Reason, tt.want)
			}
		})
	}
}

// TestRegexAsKeepalived: regex and regex_no_match judge the whole answer
// (its head too: keepalived matches what it read, from the answer's
// first byte), with regex_options and the offsets, after the status and
// the digest.
func TestRegexAsKeepalived(t *testing.T) {
	const page = "HTTP/1.0 200 OK\r\nServer: nginx\r\n\r\n<html>status: READY</html>\n"
	off := func(n int) *int { return &n }
	tests := []struct {
		name     string
		re       string
		opts     []string
		noMatch  bool
		min      int
		max      *int
		want     Outcome
		reason   string
		compiled string // the pattern Go compiles, if not re
	}{
		{"match", "status: READY", nil, false, 0, nil, Up, "", ""},
		{"no match", "status: DOWN", nil, false, 0, nil, Down, "GET /: the answer does not match regex status: DOWN", ""},
		{"regex_no_match, absent", "status: DOWN", nil, true, 0, nil, Up, "", ""},
		{"regex_no_match, present", "READY", nil, true, 0, nil, Down, "GET /: regex_no_match: the answer matches READY", ""},
		{"the head is matched", "^HTTP/1\\.0 200", nil, false, 0, nil, Up, "", ""},
		{"caseless", "status: ready", []string{"caseless"}, false, 0, nil, Up, "", "(?i)status: ready"},
		{"not caseless", "status: ready", nil, false, 0, nil, Down, "", ""},
		{"multiline", "^<html>", []string{"multiline"}, false, 0, nil, Up, "", "(?m)^<html>"},
		{"firstline", "nginx", []string{"firstline"}, false, 0, nil, Down, "", ""},
		{"regex_min_offset passed", "HTTP", nil, false, 1, nil, Down, "", ""},
		{"regex_min_offset before", "READY", nil, false, 40, nil, Up, "", ""},
		{"regex_max_offset: starts at it", "HTTP", nil, false, 0, off(0), Up, "", ""},
		{"regex_max_offset: starts after", "READY", nil, false, 0, off(20), Down, "", ""},
		// PCRE2's $ matches before the answer's final newline too.
		{"$ before the final newline", "READY</html>$", nil, false, 0, nil, Up, "", ""},
		{"$ with dollar_endonly", "READY</html>$", []string{"dollar_endonly"}, false, 0, nil, Down, "", ""},
		{"$ after the final newline", "READY</html>\n$", nil, false, 0, nil, Up, "", ""},
	}
	s := newRawServer(t, "tcp4", "127.0.0.1:0", replyWith(page))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := url("/")
			u.Regex, u.RegexOptions, u.RegexNoMatch, u.RegexMinOffset, u.RegexMaxOffset = tt.re, tt.opts, tt.noMatch, tt.min, tt.max
			pat := tt.compiled
			if pat == "" {
				pat = tt.re
			}
			u.Regexp = regexp.MustCompile(pat)
			u.RegexFirstLine = len(tt.opts) > 0 && tt.opts[0] == "firstline"
			c, rs := rawChecker(s, u)
			p := mustHTTP(t, c, rs, "")
			r := probe(t, p)
			if r.Outcome != tt.want || tt.reason != "" && r.Reason != tt.reason {
				t.Errorf("%s %q, want %s %q", r.Outcome, r.Reason, tt.want, tt.reason)
			}
		})
	}
}

// TestRegexFromConfiguration: a url's regex and options as written in a
// configuration file reach the check.
func TestRegexFromConfiguration(t *testing.T) {
	s := newRawServer(t, "tcp4", "127.0.0.1:0", replyWith("HTTP/1.0 200 OK\r\n\r\nStatus: Ready 42\n"))
	for _, tt := range []struct {
		lines string
		want  Outcome
	}{
		{`regex "ready \\d+"` + "\nregex_options caseless", Up},
		{`regex "ready \\d+"`, Down},
		{`regex "ready \\d+"` + "\nregex_options caseless\nregex_no_match", Down},
	} {
		t.Run(tt.lines, func(t *testing.T) {
			cfg := parse(t, "virtual_server 192.0.2.1 80 {\n"+
				"real_server "+s.addrPort().Addr().String()+" "+strconv.Itoa(int(s.addrPort().Port()))+" {\nHTTP_GET {\nurl {\npath /\n"+tt.lines+"\n}\n}\n}\n}\n")
			rs := cfg.VirtualServers[0].RealServers[0]
			p := mustHTTP(t, rs.Checkers[0], rs, "")
			if r := probe(t, p); r.Outcome != tt.want {
				t.Errorf("%s %q, want %s", r.Outcome, r.Reason, tt.want)
			}
		})
	}
}

// TestTimeoutsAsKeepalived: connect_timeout bounds each phase as in
// keepalived, not the whole fetch: an HTTP_GET answer that comes in
// pieces, each within connect_timeout of the last, passes however long
// it takes in all (http_read_thread's timeout is per read); an SSL_GET
// answer must come whole within one connect_timeout of its first bytes
// (ssl_read_thread carries the time left); and a head that does not
// begin within connect_timeout of the request fails both.
func TestTimeoutsAsKeepalived(t *testing.T) {
	const timeout = time.Second
	drip := func(c net.Conn, req string) {
		c.Write([]byte(okHead))
		for range 5 {
			time.Sleep(timeout * 3 / 10)
			c.Write([]byte("."))
		}
		c.Close()
	}
	late := func(c net.Conn, req string) {
		time.Sleep(timeout * 3 / 2)
		c.Write([]byte(okHead))
		c.Close()
	}
	tests := []answerCase{
		{"HTTP_GET drips", "HTTP_GET", drip, Up, "all URLs answered"},
		{"SSL_GET drips", "SSL_GET", drip, Down, "GET /: body: timed out"},
		{"HTTP_GET late", "HTTP_GET", late, Down, "GET /: timed out"},
		{"SSL_GET late", "SSL_GET", late, Down, "GET /: timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, timeout)
		})
	}
}

// TestAnswerHead: the status and Content-Length as keepalived's
// extract_status_code and extract_content_length read them.
func TestAnswerHead(t *testing.T) {
	for _, tt := range []struct {
		head   string
		status int
		length int64
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n", 200, 17},
		{"HTTP/1.1 200\r\n\r\n", 0, -1}, // no space after the code
		{"HTTP/1.1 2000 OK\r\n\r\n", 0, -1},
		{"HTTP/1.1 20x OK\r\n\r\n", 0, -1},
		{"HTTP/1.1\r\n200 OK\r\n\r\n", 0, -1},
		{"HTTP/1.0 503 Busy\r\ncontent-length: 5\r\n\r\n", 503, -1}, // keepalived looks for it in that case only
		{"HTTP/1.0 200 OK\r\nContent-Length:\r\n\r\n", 200, 0},
		{"HTTP/1.0 200 OK\r\nContent-Length: 12abc\r\n\r\n", 200, -1},
		{"HTTP/1.0 200 OK\r\nX-Content-Length: 3\r\n\r\n", 200, 3}, // a substring, as strstr finds it
	} {
		a := newAnswer(&config.URL{})
		for i := range len(tt.head) { // a byte at a time: the head's end straddles writes
			a.Write([]byte{tt.head[i]})
		}
		if !a.inBody || a.status != tt.status || a.length != tt.length {
			t.Errorf("%q: head ended %v, status %d, length %d; want %d %d", tt.head, a.inBody, a.status, a.length, tt.status, tt.length)
		}
	}
	a := newAnswer(&config.URL{StatusCodes: []config.StatusRange{{Min: 200, Max: 299}}})
	a.Write([]byte("HTTP/1.0 200 OK\r\n" + strings.Repeat("X-Pad: 0123456789\r\n", 250)))
	if why, pass := a.judge(&config.URL{}); pass || why != "no end of the headers within 4095 bytes" {
		t.Errorf("a head over 4095 bytes: %v %q", pass, why)
	}
}

// TestDigestMatchesGenhash: for answers as servers send them (chunked,
// bounded by Content-Length with more after it, neither), the digest
// keepalived's own genhash prints passes directord's check, over HTTP
// and TLS. Skipped without genhash (Debian's keepalived package).
func TestDigestMatchesGenhash(t *testing.T) {
	genhash, err := exec.LookPath("genhash")
	if err != nil {
		t.Skip("no genhash")
	}
	answers := map[string]string{
		"chunked":            chunked,
		"Content-Length":     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello and more",
		"to the end":         "HTTP/1.0 200 OK\r\nServer: test\r\n\r\n" + strings.Repeat("a line of the page\n", 500),
		"lower-case content": "HTTP/1.0 200 OK\r\ncontent-length: 5\r\n\r\nhello and more",
	}
	for name, a := range answers {
		for _, typ := range []string{"HTTP_GET", "SSL_GET"} {
			t.Run(typ+"/"+name, func(t *testing.T) {
				var s *rawServer
				args := []string{"-s", "127.0.0.1", "-u", "/"}
				if typ == "SSL_GET" {
					s = newRawTLSServer(t, replyWith(a))
					args = append(args, "-S")
				} else {
					s = newRawServer(t, "tcp4", "127.0.0.1:0", replyWith(a))
				}
				args = append(args, "-p", strconv.Itoa(int(s.addrPort().Port())))
				out, err := exec.Command(genhash, args...).Output()
				if err != nil {
					t.Fatalf("genhash: %v: %s", err, out)
				}
				fields := strings.Fields(string(out))
				if len(fields) == 0 || len(fields[len(fields)-1]) != 32 {
					t.Fatalf("genhash printed %q", out)
				}
				u := url("/")
				u.Digest = fields[len(fields)-1]
				c, rs := rawCheckerOf(typ, s, u)
				p := mustHTTP(t, c, rs, "")
				if r := probe(t, p); r.Outcome != Up {
					t.Errorf("with genhash's digest %s: %s %q", u.Digest, r.Outcome, r.Reason)
				}
			})
		}
	}
}
