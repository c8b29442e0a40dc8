package main

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/directord/directord/integration/lab"
)

// activeConns is how many long-lived connections the active demo keeps
// open across its steps (the test keeps 300 busy; the demo shows them).
const activeConns = 60

// runActive walks through the active-active lab: three directors behind
// a BGP router, and lb3 going and coming back three ways.
func (d *demo) runActive(o lab.Options) {
	t := d.t
	o.Active = true
	d.printf("directord's active-active lab (docs/lab.md): a client behind a router running FRR,\n" +
		"three directors announcing the VIP 10.1.0.100 by BGP with BFD, the router spreading\n" +
		"the flows over them (ECMP, L4 hashing), three HTTPS real servers by direct routing.\n")

	d.step("build the lab", "Build the lab: client, router (FRR), switch, lb1-lb3, rs1-rs3, each a network namespace", func() string {
		d.l = lab.New(t, o)
		return "9 namespaces, FRR, 3 HTTPS servers"
	})
	l := d.l
	lb3 := l.Directors[2]

	d.step("start the directors", "Start directord on lb1, lb2 and lb3 (mh, mh-port; sync both ways; announce bgp)", func() string {
		l.Up()
		d.printf("    The router's route to the VIP: next hops %s.\n", hops(l.NextHops()))
		d.printf("    ipvsadm -Ln on lb1:\n%s", indent(l.Directors[0].Ipvsadm("-Ln")))
		return "3 next hops"
	})

	var conns []*lab.Conn
	d.step("long-lived connections", fmt.Sprintf("Open %d long-lived connections (HTTP keep-alive over TLS)", activeConns), func() string {
		for len(conns) < activeConns {
			c, err := l.Dial()
			if err != nil {
				t.Fatalf("connection %d: %v", len(conns), err)
			}
			conns = append(conns, c)
			t.Cleanup(func() { c.Close() })
		}
		per := map[string]int{}
		for _, c := range conns {
			per[c.Server]++
		}
		var by []string
		for _, dr := range l.Directors {
			by = append(by, fmt.Sprintf("%s %d", dr.Name, dr.Scheduled()))
		}
		d.printf("    Scheduled by the directors (all connections so far): %s.\n", strings.Join(by, ", "))
		d.printf("    On the real servers: %v.\n", per)
		return fmt.Sprintf("%d open", len(conns))
	})

	d.printf("\nFrom here on, the client also sends %d requests a second in the background,\n"+
		"each on a new connection; what failed is counted per step.\n", d.rate)
	d.tr = l.StartTraffic(d.rate)
	d.answered(time.Now(), d.rate)

	converge := func(name, title string, want []*lab.Director, change func()) {
		d.step(name, title, func() string {
			changed := time.Now()
			change()
			took := l.WaitAnnounced(want, 60*time.Second)
			done := time.Now()
			d.answered(done, d.rate)
			before := lab.Count(d.tr.Results(), lab.StartedIn(changed, done))
			d.printf("    The router's next hops %s, %s after the change.\n", hops(l.NextHops()), secs(took))
			d.printf("    New connections begun meanwhile: %s.\n", failures(before))
			alive := 0
			var first string
			for _, c := range conns {
				s, err := c.Get()
				switch {
				case err == nil && s == c.Server:
					alive++
				case first != "":
				case err != nil:
					first = fmt.Sprintf("port %d: %v", c.ClientPort(), err)
				default:
					first = fmt.Sprintf("port %d: answered by %s, was %s", c.ClientPort(), s, c.Server)
				}
			}
			d.printf("    Long-lived connections answering, by their first real server: %d of %d.\n", alive, len(conns))
			if first != "" {
				d.printf("    The first lost: %s.\n", first)
			}
			return fmt.Sprintf("converged in %s; %d/%d long-lived", secs(took), alive, len(conns))
		})
	}
	others := l.Directors[:2]
	converge("lb3 killed", "directord on lb3 killed (SIGKILL): its BGP session ends with it", others, lb3.Kill)
	converge("lb3 back", "directord on lb3 started again", l.Directors, lb3.Start)
	converge("lb3 cut off", "lb3's cable cut: BFD tells the router", others, lb3.CutLink)
	converge("lb3 mended", "lb3's cable plugged back in", l.Directors, lb3.MendLink)
	converge("lb3 drained", "directorctl drain-director on lb3, then SIGTERM", others, func() {
		if _, err := lb3.Ctl("drain-director"); err != nil {
			t.Fatal(err)
		}
		lb3.Signal(syscall.SIGTERM)
		if !lb3.Stopped(30 * time.Second) {
			t.Fatal("directord on lb3 did not stop")
		}
	})
	converge("lb3 returns", "directord on lb3 started again, taking its share", l.Directors, lb3.Start)

	d.tr.Stop()
	d.summary()
}

// hops reads "10.1.0.11, 10.1.0.12".
func hops(as []netip.Addr) string {
	if len(as) == 0 {
		return "none"
	}
	var s []string
	for _, a := range as {
		s = append(s, a.String())
	}
	return strings.Join(s, ", ")
}
