package healthcheck

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/directord/directord/config"
)

// maxHead is the most an answer's status line and headers may take, as
// in keepalived, whose answer buffer (MAX_BUFFER_LENGTH, 4096 bytes with
// its terminating NUL) must hold them whole: a longer head is no answer.
const maxHead = 4095

// answer reads an HTTP answer as keepalived's http_process_response and
// http_handle_response read it, from the bytes as they come (Write), so
// that HTTP_GET and SSL_GET judge a real server as keepalived does:
//
//   - the head ends at the first blank line (CRLF CRLF), within maxHead
//     bytes;
//   - the status code is the three digits after the first space of the
//     status line, followed by a space ("HTTP/1.1 200 OK"; "HTTP/1.1
//     200" has none, as for keepalived);
//   - Content-Length is read where "Content-Length:" is written in that
//     case in the head; none: every byte until the end;
//   - the digest is the MD5 of the raw bytes after the head, up to
//     Content-Length if there is one: a chunked body is hashed with its
//     chunk sizes, as keepalived and its genhash hash it;
//   - the regex is matched against the whole answer, head included, its
//     offsets counted from the answer's first byte.
//
// It is a pure value with no connection: the fuzz target's entry point.
type answer struct {
	head   []byte // the head so far, until its end is found
	inBody bool   // the head has ended
	status int    // 0: none readable
	length int64  // Content-Length; -1 for none
	body   int64  // bytes after the head
	md5    hash.Hash
	// subject is the whole answer, for the regex: nil without one.
	subject []byte
	wantRE  bool
	// overflow: the head did not end within maxHead bytes, or the body
	// passed maxBody.
	overflow bool
}

// newAnswer is the reader of an answer to u: it hashes for u's digest
// and keeps the answer for u's regex, only where u has them.
func newAnswer(u *config.URL) *answer {
	a := &answer{length: -1, wantRE: u.Regexp != nil}
	if u.Digest != "" {
		a.md5 = md5.New()
	}
	return a
}

// Write takes the next bytes of the answer; it never fails (it is an
// io.Writer for io.Copy and tee readers).
func (a *answer) Write(b []byte) (int, error) {
	n := len(b)
	if a.wantRE && !a.overflow {
		room := maxHead + maxBody - len(a.subject)
		a.subject = append(a.subject, b[:min(len(b), room)]...)
	}
	if !a.inBody {
		if a.overflow {
			return n, nil
		}
		// The blank line may straddle the bytes so far and these.
		from := max(len(a.head)-3, 0)
		a.head = append(a.head, b...)
		i := bytes.Index(a.head[from:], []byte("\r\n\r\n"))
		if i < 0 {
			if len(a.head) >= maxHead {
				a.overflow, a.head = true, nil
			}
			return n, nil
		}
		end := from + i + 4
		if end > maxHead {
			a.overflow, a.head = true, nil
			return n, nil
		}
		a.inBody = true
		a.status = statusCode(a.head[:end])
		a.length = contentLength(a.head[:end])
		b = a.head[end:]
		a.head = a.head[:end:end]
	}
	if a.md5 != nil && (a.length < 0 || a.body < a.length) {
		h := b
		if a.length >= 0 && int64(len(h)) > a.length-a.body {
			h = h[:a.length-a.body]
		}
		a.md5.Write(h)
	}
	a.body += int64(len(b))
	if a.body > maxBody {
		a.overflow = true
	}
	return n, nil
}

// statusCode is the status of head as keepalived's extract_status_code
// reads it; 0 for none.
func statusCode(head []byte) int {
	i := bytes.IndexAny(head, " \r")
	if i < 0 || head[i] != ' ' {
		return 0
	}
	c := head[i+1:]
	if len(c) < 4 || c[3] != ' ' {
		return 0
	}
	code := 0
	for _, d := range c[:3] {
		if d < '0' || d > '9' {
			return 0
		}
		code = code*10 + int(d-'0')
	}
	return code
}

// contentLength is head's Content-Length as keepalived's
// extract_content_length reads it: after the first "Content-Length:"
// (in that case), blanks, then digits that end the line; -1 for none or
// for what is not that. (keepalived looks for it in what it read with
// the head, part of the body too; directord in the head only.)
func contentLength(head []byte) int64 {
	i := bytes.Index(head, []byte("Content-Length:"))
	if i < 0 {
		return -1
	}
	v := head[i+len("Content-Length:"):]
	j := 0
	for j < len(v) && strings.IndexByte(" \t\n\v\f\r", v[j]) >= 0 {
		j++
	}
	if j < len(v) && v[j] == '+' {
		j++
	}
	n, digits := int64(0), 0
	for j < len(v) && v[j] >= '0' && v[j] <= '9' {
		if n > (1<<62)/10 {
			return -1
		}
		n = n*10 + int64(v[j]-'0')
		j++
		digits++
	}
	if digits == 0 {
		// strtoul read nothing: its end is just after the colon, which
		// ends the line only for an empty value, read as 0.
		if len(v) > 0 && (v[0] == '\r' || v[0] == '\n') {
			return 0
		}
		return -1
	}
	if j < len(v) && v[j] != '\r' && v[j] != '\n' {
		return -1
	}
	return n
}

// judge is the verdict on a complete answer to u (the server closed,
// or, for SSL_GET, the connection ended after the head), in
// keepalived's order: an answer at all, its status, its digest, its
// regex. The reason is "" for a pass.
func (a *answer) judge(u *config.URL) (reason string, pass bool) {
	switch {
	case !a.inBody && a.overflow:
		return fmt.Sprintf("no end of the headers within %d bytes", maxHead), false
	case !a.inBody && len(a.head) == 0:
		return "no answer", false
	case !a.inBody:
		return "no end of the headers", false
	case a.status == 0:
		return "no status code", false
	}
	ok := false
	for _, r := range u.StatusCodes {
		ok = ok || r.Contains(a.status)
	}
	if !ok {
		return fmt.Sprintf("status %d", a.status), false
	}
	if a.md5 != nil {
		if a.overflow && (a.length < 0 || a.length > maxBody) {
			return fmt.Sprintf("body longer than %d MiB, for its digest", maxBody>>20), false
		}
		if got := hex.EncodeToString(a.md5.Sum(nil)); !strings.EqualFold(got, u.Digest) {
			return fmt.Sprintf("digest %s, want %s", got, strings.ToLower(u.Digest)), false
		}
	}
	if u.Regexp != nil {
		if matched := matchRegex(u, a.subject); matched == u.RegexNoMatch {
			if u.RegexNoMatch {
				return "regex_no_match: the answer matches " + u.Regex, false
			}
			return "the answer does not match regex " + u.Regex, false
		}
	}
	return "", true
}

// matchRegex tells whether u's regex matches subject, the whole answer,
// at an offset from regex_min_offset to regex_max_offset (the last
// offset a match may start at) where they are set, as keepalived's
// check_regex asks PCRE2. The leftmost match is the earliest that
// starts at or after regex_min_offset: if it starts after
// regex_max_offset, none starts before.
//
// PCRE2's $ (without dollar_endonly) also matches before a newline that
// ends the subject, where Go's matches at its very end only: a pattern
// with a $ that does not match the answer is tried again on the answer
// without its final newline (an answer of "OK\n" matches "OK$", as
// keepalived finds).
func matchRegex(u *config.URL, subject []byte) bool {
	if matchFrom(u, subject) {
		return true
	}
	n := len(subject)
	if n > 0 && subject[n-1] == '\n' && strings.Contains(u.Regex, "$") && !slices.Contains(u.RegexOptions, "dollar_endonly") {
		return matchFrom(u, subject[:n-1])
	}
	return false
}

func matchFrom(u *config.URL, subject []byte) bool {
	from := min(u.RegexMinOffset, len(subject))
	loc := u.Regexp.FindIndex(subject[from:])
	if loc == nil {
		return false
	}
	if u.RegexFirstLine {
		if nl := bytes.IndexByte(subject[from:], '\n'); nl >= 0 && loc[0] > nl {
			return false
		}
	}
	return u.RegexMaxOffset == nil || from+loc[0] <= *u.RegexMaxOffset
}
