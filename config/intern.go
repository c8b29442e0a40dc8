package config

import (
	"hash/maphash"
	"strconv"
	"strings"
	"time"
)

// checkShare gives the checkers of one load that are written alike one
// URL and one HTTPCheck each, instead of a copy per real server: a file
// of 1,000 virtual servers of 20 real servers, each with the same
// SSL_GET block, held 20,000 of each: 328 of the 851 bytes of live heap
// a real server took (TestModelBytesPerRealServer, 523 shared). Sharing is by value,
// made as each url and checker is read, so the copies never pile up
// while a large file is decoded (the `-t` peak). What is shared is
// never changed afterwards: resolve writes a checker's resolved
// virtual hosts into a copy, shared in turn.
//
// A url's or HTTP check's key holds all of its value, so two values
// share only when no reader of the model can tell them apart.
type checkShare struct {
	urls  map[urlKey]*URL
	index map[*URL]int // each shared URL's place, for httpKey
	https map[httpKey]*HTTPCheck
	// specs are the shared checker specs by their value's hash, each
	// hash's specs (a collision is told apart by the whole value): a
	// map keyed by the 240-byte value itself would hold a second copy
	// of every spec no other checker shares.
	specs map[uint64][]*CheckerSpec
	seed  maphash.Seed
}

type urlKey struct {
	path, digest, vhost, regex, codes, options string
	noMatch, firstLine, hasMax                 bool
	minOffset, maxOffset                       int
}

type httpKey struct {
	urls, vhost, sniVhost, protocol, sniName string
	sni, fastRecovery, verify                bool
	reuse                                    time.Duration
}

// url returns the shared URL of u's value, u itself the first time.
func (s *checkShare) url(u *URL) *URL {
	var codes strings.Builder
	for _, c := range u.StatusCodes {
		codes.WriteString(strconv.Itoa(c.Min))
		codes.WriteByte('-')
		codes.WriteString(strconv.Itoa(c.Max))
		codes.WriteByte(' ')
	}
	k := urlKey{path: u.Path, digest: u.Digest, vhost: u.VirtualHost, regex: u.Regex,
		codes: codes.String(), options: strings.Join(u.RegexOptions, "\x00"),
		noMatch: u.RegexNoMatch, firstLine: u.RegexFirstLine, minOffset: u.RegexMinOffset}
	if u.RegexMaxOffset != nil {
		k.hasMax, k.maxOffset = true, *u.RegexMaxOffset
	}
	if v, ok := s.urls[k]; ok {
		return v
	}
	if s.urls == nil {
		s.urls, s.index = map[urlKey]*URL{}, map[*URL]int{}
	}
	s.urls[k] = u
	s.index[u] = len(s.index)
	return u
}

// http returns the shared HTTPCheck of h's value (its URLs already
// shared by url), a copy of h the first time.
func (s *checkShare) http(h HTTPCheck) *HTTPCheck {
	var urls strings.Builder
	for _, u := range h.URLs {
		i, ok := s.index[u]
		if !ok {
			// Not from url (a model built by hand): not shared.
			return &h
		}
		urls.WriteString(strconv.Itoa(i))
		urls.WriteByte(' ')
	}
	k := httpKey{urls: urls.String(), vhost: h.VirtualHost, sniVhost: h.SNIVirtualHost,
		protocol: h.HTTPProtocol, sniName: h.SNIName, sni: h.EnableSNI,
		fastRecovery: h.FastRecovery, verify: h.VerifyCertificate, reuse: h.ReuseConnection}
	if v, ok := s.https[k]; ok {
		return v
	}
	if s.https == nil {
		s.https = map[httpKey]*HTTPCheck{}
	}
	p := &h
	s.https[k] = p
	return p
}

// spec returns the shared CheckerSpec of c's value, a copy of c the
// first time. c's HTTP check, if any, is shared already (http); its
// other checks' parts (Misc, UDP, DNS, SMTP) are each checker's own, so
// a spec that has one is shared by no other checker.
func (s *checkShare) spec(c CheckerSpec) *CheckerSpec {
	if s.specs == nil {
		s.specs, s.seed = map[uint64][]*CheckerSpec{}, maphash.MakeSeed()
	}
	h := maphash.Comparable(s.seed, c)
	for _, v := range s.specs[h] {
		if *v == c {
			return v
		}
	}
	p := &c
	s.specs[h] = append(s.specs[h], p)
	return p
}
