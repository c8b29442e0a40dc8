package vrrp

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeKernel is an installer's kernel: the entries in it, and who put
// each there ("" for one that was there before directord).
type fakeKernel struct {
	in      map[string]string
	failDel map[string]bool
	log     []string
}

func (k *fakeKernel) install(s *installed[string, string], key, owner string) error {
	return s.add(key, func() (string, bool, error) {
		if _, ok := k.in[key]; ok {
			k.log = append(k.log, "exists "+key)
			return "", false, nil // EEXIST: not ours
		}
		if key == "bad" {
			return "", false, errors.New("refused")
		}
		k.in[key] = owner
		k.log = append(k.log, "add "+key)
		return owner + ":" + key, true, nil
	})
}

func (k *fakeKernel) del(key string) func(string) error {
	return func(e string) error {
		if k.failDel[key] {
			return errors.New("remove " + key + " failed")
		}
		delete(k.in, key)
		k.log = append(k.log, "del "+e)
		return nil
	}
}

func (k *fakeKernel) entries() []string {
	var out []string
	for key := range k.in {
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

func TestInstalled(t *testing.T) {
	t.Run("only what it added is removed", func(t *testing.T) {
		k := &fakeKernel{in: map[string]string{"operator": ""}}
		s := newInstalled[string, string]()
		for _, key := range []string{"a", "operator", "b"} {
			if err := k.install(s, key, "n1"); err != nil {
				t.Fatal(err)
			}
		}
		if err := k.install(s, "bad", "n1"); err == nil {
			t.Error("a refused install: no error")
		}
		if s.has("operator") || s.has("bad") || !s.has("a") {
			t.Errorf("claims: operator %v bad %v a %v, want a only with b", s.has("operator"), s.has("bad"), s.has("a"))
		}
		for _, key := range []string{"operator", "a", "a", "never"} {
			if err := s.remove(key, k.del(key)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.removeAll(func(key, e string) error { return k.del(key)(e) }); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"operator"}, k.entries()); d != "" {
			t.Errorf("left in the kernel (-want +got):\n%s", d)
		}
		want := []string{"add a", "exists operator", "add b", "del n1:a", "del n1:b"}
		if d := cmp.Diff(want, k.log); d != "" {
			t.Errorf("kernel calls (-want +got):\n%s", d)
		}
	})
	t.Run("removeAll goes on past errors", func(t *testing.T) {
		k := &fakeKernel{in: map[string]string{}, failDel: map[string]bool{"a": true}}
		s := newInstalled[string, string]()
		k.install(s, "a", "n1")
		k.install(s, "b", "n1")
		err := s.removeAll(func(key, e string) error { return k.del(key)(e) })
		if err == nil || err.Error() != "remove a failed" {
			t.Errorf("removeAll: %v, want a's error", err)
		}
		if d := cmp.Diff([]string{"a"}, k.entries()); d != "" {
			t.Errorf("left (-want +got):\n%s", d)
		}
		if s.has("a") || s.has("b") {
			t.Error("claims left after removeAll")
		}
	})
	t.Run("a reload hands over what both want", func(t *testing.T) {
		k := &fakeKernel{in: map[string]string{}}
		old, cur := newInstalled[string, string](), newInstalled[string, string]()
		for _, key := range []string{"kept", "dropped", "renamed@1"} {
			k.install(old, key, "old")
		}
		// The new configuration wants kept, renamed (at another line) and
		// added: what old claimed is taken, the rest is added.
		for _, w := range [][2]string{{"kept", "kept"}, {"renamed@1", "renamed@2"}, {"added", "added"}} {
			if !cur.take(old, w[0], w[1]) {
				k.install(cur, w[1], "new")
			}
		}
		if cur.take(old, "never", "never") {
			t.Error("took a claim old never had")
		}
		if !cur.has("renamed@2") || cur.has("renamed@1") || old.has("kept") || !old.has("dropped") {
			t.Error("claims not moved")
		}
		// old stops: it removes what only it wanted.
		old.removeAll(func(key, e string) error { return k.del(key)(e) })
		if d := cmp.Diff([]string{"added", "kept", "renamed@1"}, k.entries()); d != "" {
			t.Errorf("after old stopped (-want +got):\n%s", d)
		}
		var got []string
		cur.each(func(key, e string) { got = append(got, key+"="+e) })
		slices.Sort(got)
		if d := cmp.Diff([]string{"added=new:added", "kept=old:kept", "renamed@2=old:renamed@1"}, got); d != "" {
			t.Errorf("cur's claims (-want +got):\n%s", d)
		}
		cur.removeAll(func(_, e string) error { _, key, _ := strings.Cut(e, ":"); return k.del(key)(e) })
		if len(k.entries()) != 0 {
			t.Errorf("left after both stopped: %v", k.entries())
		}
	})
}
