package script

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/users"
)

// ErrDisabled marks a script that does not run: enable_script_security
// found it unsafe, or it cannot be found or executed by its user, or its
// user does not exist. keepalived disables such a script at load (a
// notify script is not run, a vrrp_script is no longer tracked, a
// MISC_CHECK is removed); directord does the same.
var ErrDisabled = errors.New("script disabled")

// searchPath is where a bare command name is looked for, and the PATH the
// scripts get.
const searchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Policy is what global_defs says of scripts.
type Policy struct {
	// Security is enable_script_security.
	Security bool
	// User and Group run scripts that name none (script_user); empty
	// means keepalived_script if that user exists, else the user directord
	// runs as (root).
	User, Group string
}

// PolicyOf is the policy of a configuration.
func PolicyOf(g *config.Global) Policy {
	return Policy{Security: g.EnableScriptSecurity, User: g.ScriptUser, Group: g.ScriptGroup}
}

// Prog is a script as checked at load: the file that runs, as whom, or
// why it does not run.
type Prog struct {
	Script *config.Script
	// Path is the file that runs: the command's name with every symbolic
	// link resolved at check time. Running it, not the name as written,
	// means that repointing a link after the check cannot swap the script.
	Path string
	// Uid and Gid run it; cred is nil when they are directord's own.
	Uid, Gid uint32
	cred     *syscall.Credential
	// Disabled, wrapping ErrDisabled, says why the script does not run.
	Disabled error
	// Insecure names the first component of the path that someone other
	// than root could change (without enable_script_security the script
	// runs all the same, as in keepalived); empty when safe or unchecked.
	Insecure string
	// Searched is set when a bare name was found by a PATH search.
	Searched bool
}

// Check checks s as keepalived's check_script_secure does, under p:
//
//   - the user and group resolved (the script's own, else script_user,
//     else keepalived_script, else root); with enable_script_security a
//     script whose default user cannot be found is disabled, as in
//     keepalived, and so is any script whose named user does not exist;
//   - a bare name looked for in PATH (keepalived warns; so does the
//     caller, from Searched);
//   - the file must exist and be executable by that user, or the script
//     is disabled;
//   - when it runs with root's rights (uid 0, gid 0, or a set-uid/gid
//     root file), every component of the path as written and of its
//     resolved target must belong to root and be writable by no one else
//     (a group write bit is allowed for group root, and a folder with the
//     sticky bit may be world-writable, as keepalived allows); the first
//     that is not makes the script insecure, and disabled under
//     enable_script_security. keepalived 2.2.7 checks only the resolved
//     target; directord checks the name as written too, so a link in a
//     world-writable folder is refused (later keepalived releases check
//     both too).
func Check(s *config.Script, p Policy) *Prog {
	pr := &Prog{Script: s}
	if s == nil || len(s.Args) == 0 {
		pr.Disabled = fmt.Errorf("%w: no command", ErrDisabled)
		return pr
	}
	name := s.Args[0]
	var err error
	if pr.Uid, pr.Gid, pr.cred, err = resolveUser(s, p); err != nil {
		pr.Disabled = fmt.Errorf("%w: %s: %v", ErrDisabled, name, err)
		return pr
	}
	written := name
	if !strings.Contains(name, "/") {
		found, err := search(name, pr.Uid, pr.Gid)
		if err != nil {
			pr.Disabled = fmt.Errorf("%w: %s: %v", ErrDisabled, name, err)
			return pr
		}
		written, pr.Searched = found, true
	}
	if written, err = filepath.Abs(written); err != nil {
		pr.Disabled = fmt.Errorf("%w: %s: %v", ErrDisabled, name, err)
		return pr
	}
	real, err := filepath.EvalSymlinks(written)
	if err != nil {
		pr.Disabled = fmt.Errorf("%w: %s cannot be accessed: %v", ErrDisabled, name, err)
		return pr
	}
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		pr.Disabled = fmt.Errorf("%w: %s cannot be accessed: %v", ErrDisabled, name, err)
		return pr
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || !executable(&st, pr.Uid, pr.Gid) {
		pr.Disabled = fmt.Errorf("%w: %s is not executable for uid:gid %d:%d", ErrDisabled, real, pr.Uid, pr.Gid)
		return pr
	}
	pr.Path = real
	if !asRoot(&st, pr.Uid, pr.Gid) {
		return pr
	}
	for _, path := range []string{written, real} {
		bad, err := unsafeComponent(path)
		if err != nil {
			// A folder that is not one, a device as the script: always
			// refused, as keepalived does.
			pr.Disabled = fmt.Errorf("%w: %s: %v", ErrDisabled, name, err)
			return pr
		}
		if bad != "" {
			pr.Insecure = bad
			if p.Security {
				pr.Disabled = fmt.Errorf("%w: unsafe permissions on %s (owned by someone other than root, or writable by group or others): enable_script_security refuses %s", ErrDisabled, bad, name)
			}
			return pr
		}
	}
	return pr
}

// resolveUser is keepalived's choice of uid and gid for a script.
func resolveUser(s *config.Script, p Policy) (uid, gid uint32, cred *syscall.Credential, err error) {
	name, group := s.User, s.Group
	if name == "" {
		name, group = p.User, p.Group
	}
	if name == "" {
		if _, lerr := users.Lookup("keepalived_script"); lerr == nil {
			name = "keepalived_script"
		} else if p.Security {
			// keepalived: "Unable to set default user keepalived_script".
			return 0, 0, nil, errors.New("enable_script_security without script_user, and no user keepalived_script: keepalived disables the script; set script_user")
		} else {
			u, g := uint32(os.Getuid()), uint32(os.Getgid())
			return u, g, nil, nil
		}
	}
	u, err := users.Lookup(name)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("script user %s: %w", name, err)
	}
	uid64, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid64, _ := strconv.ParseUint(u.Gid, 10, 32)
	if group != "" {
		g, err := users.LookupGroup(group)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("script group %s: %w", group, err)
		}
		gid64, _ = strconv.ParseUint(g.Gid, 10, 32)
	}
	uid, gid = uint32(uid64), uint32(gid64)
	if int(uid) == os.Getuid() && int(gid) == os.Getgid() {
		return uid, gid, nil, nil
	}
	// Only the script's own group: directord's supplementary groups (root,
	// disk...) must not go with it.
	return uid, gid, &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{gid}}, nil
}

// search finds a bare command name in searchPath, as execvp would for the
// script's user.
func search(name string, uid, gid uint32) (string, error) {
	denied := false
	for _, dir := range filepath.SplitList(searchPath) {
		p := filepath.Join(dir, name)
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil {
			continue
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFREG && executable(&st, uid, gid) {
			return p, nil
		}
		denied = true
	}
	if denied {
		return "", errors.New("permission denied in PATH")
	}
	return "", errors.New("not found in PATH")
}

// executable is keepalived's is_executable: root may run a file with any
// execute bit; others by the bit of their class.
func executable(st *syscall.Stat_t, uid, gid uint32) bool {
	m := st.Mode
	switch {
	case uid == 0:
		return m&0o111 != 0
	case uid == st.Uid:
		return m&0o100 != 0
	case gid == st.Gid:
		return m&0o010 != 0
	default:
		return m&0o001 != 0
	}
}

// asRoot tells whether a script runs with root's rights, the only case
// keepalived checks the path of.
func asRoot(st *syscall.Stat_t, uid, gid uint32) bool {
	return uid == 0 || gid == 0 ||
		(st.Uid == 0 && st.Mode&syscall.S_IXUSR != 0 && st.Mode&syscall.S_ISUID != 0) ||
		(st.Gid == 0 && st.Mode&syscall.S_IXGRP != 0 && st.Mode&syscall.S_ISGID != 0)
}

// unsafeComponent walks path from / and returns the first component that
// someone other than root could change, without following a link at the
// end of any prefix; an error for a component of the wrong type.
func unsafeComponent(path string) (string, error) {
	path = filepath.Clean(path)
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	prefix := "/"
	for i := -1; i < len(parts); i++ {
		if i >= 0 {
			prefix = filepath.Join(prefix, parts[i])
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(prefix, &st); err != nil {
			return "", &fs.PathError{Op: "lstat", Path: prefix, Err: err}
		}
		last := i == len(parts)-1
		typ := st.Mode & syscall.S_IFMT
		switch {
		case typ == syscall.S_IFLNK:
			// Its mode means nothing; only root may replace it. What it
			// points to is walked as part of the resolved path.
		case !last && typ != syscall.S_IFDIR, last && typ != syscall.S_IFREG:
			return "", fmt.Errorf("wrong file type in script path: %s", prefix)
		}
		if st.Uid != 0 {
			return prefix, nil
		}
		sticky := typ == syscall.S_IFDIR && st.Mode&syscall.S_ISVTX != 0
		if typ != syscall.S_IFLNK && !sticky && ((st.Gid != 0 && st.Mode&syscall.S_IWGRP != 0) || st.Mode&syscall.S_IWOTH != 0) {
			return prefix, nil
		}
	}
	return "", nil
}
