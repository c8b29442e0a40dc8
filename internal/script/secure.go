package script

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Secure checks, as keepalived's enable_script_security does, that no one
// but root can change what path runs: the file and every folder above it
// must belong to root and be writable by no group or other user (a sticky
// folder such as /tmp is not enough: anyone may create a file there).
func Secure(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: not an absolute path", path)
	}
	// The file that runs, not the link to it: a link in a safe folder to
	// a file in someone's home must not pass.
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	for {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: cannot tell its owner", p)
		}
		if st.Uid != 0 {
			return fmt.Errorf("%s belongs to uid %d, not root: enable_script_security refuses %s", p, st.Uid, path)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s is writable by group or others: enable_script_security refuses %s", p, path)
		}
		if p == "/" {
			return nil
		}
		p = filepath.Dir(p)
	}
}
