// Package users looks up users and groups by name as the C library's
// getpwnam and getgrnam do, which is how keepalived finds script_user,
// keepalived_script and a FIFO's owner: in /etc/passwd and /etc/group,
// then in the name services /etc/nsswitch.conf adds (LDAP, sssd,
// systemd's).
//
// directord's binaries are built without cgo (the Makefile's
// CGO_ENABLED=0: the same static program wherever it is built, without
// libc's pages in memory), so Go's os/user reads the two files alone. A
// name they do not hold is asked of getent(1), which goes through the C
// library and so through the name services, as keepalived would. Where
// getent is missing too, the name is unknown, said as os/user says it.
package users

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"
)

// getentTimeout bounds one getent: a name service that does not answer
// (an LDAP server away) must not hold a configuration's load.
const getentTimeout = 5 * time.Second

// remembered is how long getent's answer for a name (an entry, or none)
// is kept: a configuration's load asks for the same names once a script
// (keepalived_script for each that names no user, on most hosts a name
// the files do not hold), and a thousand MISC_CHECKs must not run a
// thousand getents; a reload a little later asks again.
const remembered = 10 * time.Second

type answer struct {
	f  []string
	ok bool
	at time.Time
}

var (
	mu      sync.Mutex
	answers = map[[2]string]answer{}
)

// Lookup is the user of name.
func Lookup(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if err == nil || !errors.As(err, &unknown) {
		return u, err
	}
	f, ok := getent("passwd", name, 7)
	if !ok {
		return nil, err
	}
	return &user.User{Username: f[0], Uid: f[2], Gid: f[3], Name: f[4], HomeDir: f[5]}, nil
}

// LookupGroup is the group of name.
func LookupGroup(name string) (*user.Group, error) {
	g, err := user.LookupGroup(name)
	var unknown user.UnknownGroupError
	if err == nil || !errors.As(err, &unknown) {
		return g, err
	}
	f, ok := getent("group", name, 4)
	if !ok {
		return nil, err
	}
	return &user.Group{Name: f[0], Gid: f[2]}, nil
}

// getent is the entry of name in database (passwd, group) as getent
// writes it, split at its colons into n fields whose ids (the third, and
// a passwd entry's fourth, its group) are numbers; false if getent is
// missing, knows no such name or writes something else.
//
// The entry's name may differ from the one asked, as a name service
// gives it back (sssd without case sensitivity: Alice for alice; a
// domain's qualified names), and is taken, as getpwnam's would be. A
// name of digits alone is not asked: getent takes it for a uid or gid,
// where getpwnam looks for the name; such a name only a name service
// knows is unknown here.
func getent(database, name string, n int) ([]string, bool) {
	if name == "" || strings.ContainsAny(name, ":\n") || digits(name) {
		return nil, false
	}
	key := [2]string{database, name}
	mu.Lock()
	defer mu.Unlock()
	if a, ok := answers[key]; ok && time.Since(a.at) < remembered {
		return a.f, a.ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), getentTimeout)
	defer cancel()
	var a answer
	if out, err := exec.CommandContext(ctx, "getent", database, "--", name).Output(); err == nil {
		a.f, a.ok = parseEntry(out, n)
	}
	a.at = time.Now()
	for k, old := range answers {
		if time.Since(old.at) >= remembered {
			delete(answers, k)
		}
	}
	answers[key] = a
	return a.f, a.ok
}

// parseEntry is getent's first line, if it is an entry of n fields with
// numeric ids.
func parseEntry(out []byte, n int) ([]string, bool) {
	line, _, _ := bytes.Cut(out, []byte("\n"))
	f := strings.Split(string(line), ":")
	if len(f) != n || f[0] == "" {
		return nil, false
	}
	ids := f[2:3]
	if n == 7 {
		ids = f[2:4] // a passwd entry: its uid and its group's gid
	}
	for _, id := range ids {
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return nil, false
		}
	}
	return f, true
}

// digits tells whether s is made of decimal digits alone.
func digits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}
