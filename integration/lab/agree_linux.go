package lab

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/nstest"
)

// Digest is the IPVS digest directord reports for the lab's virtual
// server (control.VirtualServer.Digest, what directorctl status shows):
// "" when directord does not answer or does not know its kernel's table.
func (d *Director) Digest() string {
	st, err := d.Status()
	if err != nil || len(st.VirtualServers) != 1 {
		return ""
	}
	return st.VirtualServers[0].Digest
}

// CtlDigest is the digest as an operator reads it: directorctl status
// --json.
func (d *Director) CtlDigest() (string, error) {
	out, err := d.Ctl("status", "--json")
	if err != nil {
		return "", err
	}
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return "", fmt.Errorf("directorctl status --json on %s: %w\n%s", d.Name, err, out)
	}
	if len(st.VirtualServers) != 1 {
		return "", fmt.Errorf("directorctl status --json on %s: %d virtual servers, want 1", d.Name, len(st.VirtualServers))
	}
	return st.VirtualServers[0].Digest, nil
}

// Digests are the running directors' digests, in the order of
// l.Directors.
func (l *Lab) Digests() []string {
	var ds []string
	for _, d := range l.Directors {
		ds = append(ds, d.Digest())
	}
	return ds
}

// WaitDigestsEqual waits until every director reports the same non-empty
// digest, and returns it with how long that took. On failure it says
// what each director holds: its digest and its kernel's table as
// ipvsadm -Ln lists it (an mh service's destinations in the kernel's
// order, which decides where a flow goes).
func (l *Lab) WaitDigestsEqual(limit time.Duration) (string, time.Duration) {
	l.t.Helper()
	start := time.Now()
	for {
		ds := l.Digests()
		if ds[0] != "" && !slices.ContainsFunc(ds, func(s string) bool { return s != ds[0] }) {
			return ds[0], time.Since(start)
		}
		if time.Since(start) > limit {
			l.t.Fatalf("the directors' digests are not equal within %v:\n%s%s", limit, l.Tables(), nstest.StarvedDuring(l.t, start))
		}
		time.Sleep(askEvery)
	}
}

// Tables says, for each director, its digest and ipvsadm -Ln.
func (l *Lab) Tables() string {
	var b strings.Builder
	for _, d := range l.Directors {
		table, err := d.ipvsadm("-Ln")
		if err != nil {
			table = err.Error()
		}
		fmt.Fprintf(&b, "%s: digest %q\n%s\n", d.Name, d.Digest(), table)
	}
	return b.String()
}

// AddRealServer builds one more real server's host on the service LAN,
// as New builds rs1 to rs3, and waits until it serves. No director knows
// of it until its configuration names it (WriteConfig) and it reloads.
func (l *Lab) AddRealServer(name string, a netip.Addr) *RealServer {
	l.t.Helper()
	r := l.newRealServer(name, a)
	r.waitListening()
	l.Reals = append(l.Reals, r)
	return r
}

// WriteConfigText writes text as the director's configuration file, for a
// file the lab's templates do not make; reals are the real servers it
// balances the service over, each at weight 1 (Complete).
func (d *Director) WriteConfigText(text string, reals []netip.Addr) {
	d.l.t.Helper()
	if err := os.WriteFile(d.File, []byte(text), 0o644); err != nil {
		d.l.t.Fatal(err)
	}
	d.reals = reals
}

// DropRepliesTo makes the real server drop what it sends to a, and only
// that (a blackhole route to a): a's TCP connections to it, a director's
// checks, never complete, while the client's connections, which a
// director forwards to it (direct routing) and it answers through the
// router, go on. undo removes the route.
func (r *RealServer) DropRepliesTo(a netip.Addr) (undo func()) {
	t := r.l.t
	t.Helper()
	route := &netlink.Route{Dst: hostNet(a), Type: unix.RTN_BLACKHOLE, Table: unix.RT_TABLE_MAIN}
	if err := r.NS.NL.RouteAdd(route); err != nil {
		t.Fatalf("blackhole route to %s on %s: %v", a, r.Name, err)
	}
	return func() {
		t.Helper()
		if err := r.NS.NL.RouteDel(route); err != nil {
			t.Fatalf("blackhole route to %s on %s, removing it: %v", a, r.Name, err)
		}
	}
}
