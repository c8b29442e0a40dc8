package main

import (
	"os"
	"testing"
)

// TestIPVSAdvice: expire_nodest_conn at 0 is warned of, at 1 or unknown
// (no IPVS module yet) it is not.
func TestIPVSAdvice(t *testing.T) {
	for _, c := range []struct {
		value string
		err   error
		warn  bool
	}{{"0\n", nil, true}, {"1\n", nil, false}, {"", os.ErrNotExist, false}} {
		got := ipvsAdvice(func(p string) ([]byte, error) {
			if p != "/proc/sys/net/ipv4/vs/expire_nodest_conn" {
				t.Errorf("read %s", p)
			}
			return []byte(c.value), c.err
		})
		if (len(got) == 1) != c.warn || len(got) > 1 {
			t.Errorf("expire_nodest_conn %q (%v): %q", c.value, c.err, got)
		}
	}
}
