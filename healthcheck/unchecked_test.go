package healthcheck

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestUncheckedLogged: a real server whose checker directord does not
// have is said in the log when the checks are made (start and reload),
// with whether it is then always alive.
func TestUncheckedLogged(t *testing.T) {
	cfg := parse(t, `
virtual_server 192.0.2.1 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    real_server 10.0.0.1 80 {
        FILE_CHECK {
        }
    }
    real_server 10.0.0.2 80 {
        PING_CHECK {
        }
        TCP_CHECK {
        }
    }
}
`)
	var buf bytes.Buffer
	var mu sync.Mutex
	if _, err := New(cfg, func(Event) {}, newTestLogger(&buf, &mu)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var lines []string
	for l := range strings.Lines(buf.String()) {
		if strings.Contains(l, "directord does not have") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "real_server=10.0.0.1:80 checker=FILE_CHECK") || !strings.Contains(lines[0], "always_alive=true") ||
		!strings.Contains(lines[1], "real_server=10.0.0.2:80 checker=PING_CHECK") || !strings.Contains(lines[1], "always_alive=false") {
		t.Errorf("log:\n%s", buf.String())
	}
}
