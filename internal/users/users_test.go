package users

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

// fakeGetent puts a getent first in PATH that knows one user, ldapuser
// (uid 4242, gid 4343), and one group, ldapgroup (gid 4444), as a name
// service beyond /etc/passwd and /etc/group would.
func fakeGetent(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
echo "$1 $3" >> "$(dirname "$0")/asked"
case "$1 $3" in
"passwd ldapuser") echo 'ldapuser:*:4242:4343:An LDAP user:/home/ldapuser:/bin/sh' ;;
"group ldapgroup") echo 'ldapgroup:*:4444:ldapuser' ;;
*) exit 2 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "getent"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	asked = filepath.Join(dir, "asked")
	mu.Lock()
	clear(answers)
	mu.Unlock()
}

// asked is the file where the fake getent writes what it was asked.
var asked string

// TestGetentOnceANameAWhile: a load that asks for the same unknown name
// a thousand times (keepalived_script, for each script that names no
// user) runs getent once for it.
func TestGetentOnceANameAWhile(t *testing.T) {
	fakeGetent(t)
	for range 1000 {
		Lookup("keepalived_script-dd")
	}
	Lookup("ldapuser")
	b, _ := os.ReadFile(asked)
	if got, want := string(b), "passwd keepalived_script-dd\npasswd ldapuser\n"; got != want {
		t.Errorf("getent was asked:\n%swant:\n%s", got, want)
	}
}

// TestNameServices: a user and a group that only a name service knows
// are found through getent, with their ids, as getpwnam and getgrnam
// would find them for keepalived.
func TestNameServices(t *testing.T) {
	fakeGetent(t)
	u, err := Lookup("ldapuser")
	if err != nil || u.Uid != "4242" || u.Gid != "4343" || u.HomeDir != "/home/ldapuser" {
		t.Errorf("Lookup(ldapuser) = %+v, %v; want uid 4242, gid 4343", u, err)
	}
	g, err := LookupGroup("ldapgroup")
	if err != nil || g.Gid != "4444" {
		t.Errorf("LookupGroup(ldapgroup) = %+v, %v; want gid 4444", g, err)
	}
}

// TestUnknownNames: a name neither the files nor getent know is unknown,
// with os/user's error.
func TestUnknownNames(t *testing.T) {
	fakeGetent(t)
	var uu user.UnknownUserError
	if _, err := Lookup("nosuchuser-dd"); err == nil || !errors.As(err, &uu) {
		t.Errorf("Lookup(nosuchuser-dd): %v, want an UnknownUserError", err)
	}
	var ug user.UnknownGroupError
	if _, err := LookupGroup("nosuchgroup-dd"); err == nil || !errors.As(err, &ug) {
		t.Errorf("LookupGroup(nosuchgroup-dd): %v, want an UnknownGroupError", err)
	}
}

// TestFilesFirst: a name /etc/passwd holds (root) is its entry there.
func TestFilesFirst(t *testing.T) {
	fakeGetent(t)
	if u, err := Lookup("root"); err != nil || u.Uid != "0" {
		t.Errorf("Lookup(root) = %+v, %v", u, err)
	}
}

// TestParseEntry: an entry with as many fields as its database has and
// numeric ids (a passwd entry's uid and gid, a group's gid) is taken,
// whatever the name it gives back.
func TestParseEntry(t *testing.T) {
	for _, tt := range []struct {
		out string
		n   int
		ok  bool
	}{
		{"ldapuser:*:4242:4343:x:/home/l:/bin/sh\n", 7, true},
		{"LDAPUser:*:4242:4343:x:/home/l:/bin/sh\n", 7, true}, // as a name service gave it back
		{"ldapuser:*:-1:4343:x:/home/l:/bin/sh\n", 7, false},
		{"ldapuser:*:42x:4343:x:/home/l:/bin/sh\n", 7, false},
		{"ldapuser:*:4242::x:/home/l:/bin/sh\n", 7, false},
		{"ldapuser:*:4242:43x:x:/home/l:/bin/sh\n", 7, false},
		{"ldapuser:*:4242:4343:x:/home/l\n", 7, false},
		{":*:4242:4343:x:/home/l:/bin/sh\n", 7, false},
		{"ldapgroup:*:4444:ldapuser\n", 4, true},
		{"ldapgroup:*:44x4:ldapuser\n", 4, false},
		{"", 7, false},
	} {
		if _, ok := parseEntry([]byte(tt.out), tt.n); ok != tt.ok {
			t.Errorf("parseEntry(%q) ok = %v, want %v", tt.out, ok, tt.ok)
		}
	}
}

// TestNumericNamesNotAsked: a name of digits is not asked of getent,
// which would take it for an id.
func TestNumericNamesNotAsked(t *testing.T) {
	fakeGetent(t)
	if _, err := Lookup("4242"); err == nil {
		t.Error("Lookup(4242) found a user: getent was asked for uid 4242")
	}
	if b, _ := os.ReadFile(asked); len(b) != 0 {
		t.Errorf("getent was asked: %s", b)
	}
}
