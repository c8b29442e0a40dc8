package vrrp

import (
	"errors"
	"net/netip"
	"sync"
)

// installed is the set of kernel entries (addresses, routes, rules) that
// directord put in, by key, with what it needs to take each out again.
// Only what it put in is its own: an entry already there when it was
// added (EEXIST: the address owner's, an operator's, another daemon's) is
// not claimed, and so never removed. A reload hands the claims over
// (take): an entry both configurations want stays in the kernel
// throughout, the new Node now removes it; one only the old wants stays
// the old's, which removes it when it stops.
//
// It does no netlink itself: Addrs, Routes and Rules (the _linux files)
// give it their kernel calls.
type installed[K comparable, E any] struct {
	mu    sync.Mutex
	added map[K]E
}

// addrKey is an address's key in an installed set: the same prefix on
// two links is two addresses.
type addrKey struct {
	link   string
	prefix netip.Prefix
}

func newInstalled[K comparable, E any]() *installed[K, E] {
	return &installed[K, E]{added: map[K]E{}}
}

// add installs the entry of k: install puts it in the kernel and reports
// whether it did (false: it was there already, and is not claimed).
func (s *installed[K, E]) add(k K, install func() (E, bool, error)) error {
	e, ok, err := install()
	if err != nil || !ok {
		return err
	}
	s.mu.Lock()
	s.added[k] = e
	s.mu.Unlock()
	return nil
}

// remove takes the entry of k out with del if add claimed it, and drops
// the claim; an entry not claimed is left alone.
func (s *installed[K, E]) remove(k K, del func(E) error) error {
	s.mu.Lock()
	e, ok := s.added[k]
	delete(s.added, k)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return del(e)
}

// removeAll takes out every entry claimed, going on past errors.
func (s *installed[K, E]) removeAll(del func(K, E) error) error {
	s.mu.Lock()
	added := s.added
	s.added = map[K]E{}
	s.mu.Unlock()
	var errs []error
	for k, e := range added {
		if err := del(k, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// take moves from's claim on old to s, as cur: the entry stays in the
// kernel and s will remove it. It reports whether from had claimed it.
func (s *installed[K, E]) take(from *installed[K, E], old, cur K) bool {
	from.mu.Lock()
	e, ok := from.added[old]
	delete(from.added, old)
	from.mu.Unlock()
	if ok {
		s.mu.Lock()
		s.added[cur] = e
		s.mu.Unlock()
	}
	return ok
}

// has reports whether k is claimed.
func (s *installed[K, E]) has(k K) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.added[k]
	return ok
}

// each calls f with every claimed entry, holding the set: f must not call
// back into it.
func (s *installed[K, E]) each(f func(K, E)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.added {
		f(k, e)
	}
}
