package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/directord/directord/integration/lab"
)

// run walks through the lab, one step at a time.
func (d *demo) run(o lab.Options) {
	t := d.t
	d.printf("directord's lab (docs/lab.md): a client behind a router, two directors sharing\n" +
		"the VIP 10.1.0.100, three HTTPS real servers behind it by direct routing.\n")

	d.step("build the lab", "Build the lab: client, router, switch, lb1, lb2, rs1-rs3, each a network namespace", func() string {
		d.l = lab.New(t, o)
		return "8 namespaces, 3 HTTPS servers"
	})
	l := d.l
	lb1, lb2, rs2 := l.Directors[0], l.Directors[1], l.Reals[1]

	d.step("start the pair", "Start directord on lb1 (priority 150) and lb2 (100), both on docs/examples/lab.conf", func() string {
		l.Up()
		d.printf("    lb1 is %s and holds the VIP; lb2 is %s; both program the service.\n", lb1.State(), lb2.State())
		d.printf("    ipvsadm -Ln on lb1:\n%s", indent(lb1.Ipvsadm("-Ln")))
		return "lb1 MASTER, lb2 BACKUP"
	})

	d.step("30 requests", "30 requests to https://10.1.0.100/, one after another, each on a new connection", func() string {
		var rs []lab.Result
		for range 30 {
			rs = append(rs, l.Get())
		}
		c := lab.Count(rs, nil)
		d.own = &c
		if c.Failed > 0 {
			t.Fatalf("%v: %v", c, c.FirstError)
		}
		d.printf("    %s: round-robin; each real server answers the client itself (direct routing).\n", servers(c))
		return "round-robin " + servers(c)
	})

	d.printf("\nFrom here on, the client also sends %d requests a second in the background,\n"+
		"each on a new connection; what failed is counted per step.\n", d.rate)
	d.tr = l.StartTraffic(d.rate)
	d.answered(time.Now(), d.rate)

	d.step("rs2 dies", "rs2's HTTPS server dies (SIGKILL)", func() string {
		killed := time.Now()
		rs2.Kill()
		lab.WaitFor(t, lab.DetectionBound+5*time.Second, "rs2 out of lb1's table", func() bool {
			_, in := lb1.Weights()[rs2.Addr]
			return !in
		})
		out := time.Now()
		took := out.Sub(killed)
		d.answered(out, d.rate)
		before := lab.Count(d.tr.Results(), lab.StartedIn(killed, out))
		after := lab.Count(d.tr.Results(), lab.StartedIn(out, time.Time{}))
		d.printf("    lb1's SSL_GET check took rs2 out of the pool %s after it died (bound: %s).\n", secs(took), secs(lab.DetectionBound))
		d.printf("    Requests begun meanwhile: %d, %d failed (those sent to rs2).\n", before.Requests, before.Failed)
		d.printf("    Since: %d, %d failed: %s.\n", after.Requests, after.Failed, servers(after))
		d.printf("    ipvsadm -Ln on lb1:\n%s", indent(lb1.Ipvsadm("-Ln")))
		return fmt.Sprintf("out of the pool after %s", secs(took))
	})

	d.step("rs2 comes back", "rs2 comes back", func() string {
		back := time.Now()
		rs2.Start()
		took := lab.WaitFor(t, 10*time.Second, "rs2 back in lb1's table", func() bool { return lb1.Weights()[rs2.Addr] == 1 })
		lab.WaitFor(t, 10*time.Second, "rs2 answering again", func() bool {
			return lab.Count(d.tr.Results(), lab.StartedIn(back, time.Time{})).ByServer[rs2.Name] >= 3
		})
		d.printf("    Its check passed: back in the pool %s after it listened again, and answering.\n", secs(took))
		return fmt.Sprintf("back in the pool after %s", secs(took))
	})

	var conn *lab.Conn
	d.step("long-lived connection", "Open a long-lived connection (HTTPS keep-alive) through lb1", func() string {
		var err error
		if conn, err = l.Dial(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		took := lab.WaitFor(t, 15*time.Second, "lb2 knowing the connection", func() bool {
			cs, err := lb2.Conns()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				if c.Client.Addr() == lab.ClientAddr && c.Client.Port() == conn.ClientPort() {
					return true
				}
			}
			return false
		})
		d.printf("    %s answers on it. lb2, the backup, has it in its IPVS connection table\n"+
			"    %s later: the kernel's connection sync, which directord runs as VRRP says.\n", conn.Server, secs(took))
		return "synced to lb2 after " + secs(took)
	})

	d.step("lb1's directord dies", "lb1's directord is killed (SIGKILL); its host lives on", func() string {
		killed := time.Now()
		lb1.Kill()
		lab.WaitFor(t, lab.MasterDownInterval+5*time.Second, "lb2 holding the VIP", lb2.HasVIP)
		owned := time.Now()
		took := owned.Sub(killed)
		lab.WaitFor(t, 5*time.Second, "lb1 without the VIP", func() bool { return !lb1.HasVIP() })
		d.answered(owned, 2*d.rate)
		during := lab.Count(d.tr.Results(), lab.StartedIn(killed, owned))
		after := lab.Count(d.tr.Results(), lab.StartedIn(owned, time.Time{}))
		d.printf("    directord's guardian, a process of its own, sent priority 0 adverts for it and\n"+
			"    removed lb1's VIP: lb2 took the VIP %s after the kill (its Skew_Time: %s;\n"+
			"    a host that dies whole, guardian and all, waits Master_Down_Interval: %s).\n"+
			"    lb2 is %s; lb1 holds no VIP.\n",
			secs(took), secs(lab.SkewTime), secs(lab.MasterDownInterval), lb2.State())
		d.printf("    Requests begun meanwhile: %s.\n", failures(during))
		d.printf("    Since: %d, %d failed.\n", after.Requests, after.Failed)
		if during.Failed > 0 {
			d.printf("    A connection lost here was made through lb1 shortly before it died,\n" +
				"    before connection sync had told lb2 of it.\n")
		}
		return fmt.Sprintf("lb2 has the VIP after %s", secs(took))
	})

	d.step("after the failover", "The long-lived connection opened before the failover", func() string {
		s, err := conn.Get()
		if err != nil {
			d.printf("    LOST: %v\n", err)
			return "lost"
		}
		d.printf("    Still answers: %s, through lb2, which knew it from connection sync.\n", s)
		return "still answers (" + s + ")"
	})

	d.step("lb1 returns", "directord starts again on lb1 and, with the higher priority, preempts lb2", func() string {
		started := time.Now()
		lb1.Start()
		took := l.WaitSteady(lb1, 30*time.Second)
		back := time.Now()
		d.answered(back, d.rate)
		d.printf("    It adopts the IPVS table as it is, starts as BACKUP, ignores lb2's lower\n"+
			"    priority adverts and takes the VIP after its own Master_Down_Interval:\n"+
			"    lb1 is %s %s after it started; lb2 is %s.\n", lb1.State(), secs(took), lb2.State())
		during := lab.Count(d.tr.Results(), lab.StartedIn(started, back))
		d.printf("    Requests begun meanwhile: %s.\n", failures(during))
		if during.Failed > 0 {
			d.printf("    The VIP moving is a failover too: a connection made through lb2 just before\n" +
				"    lb1 took over, which sync had not yet told lb1 of, is reset by lb1.\n")
		}
		d.printf("    ipvsadm -Ln on lb1:\n%s", indent(lb1.Ipvsadm("-Ln")))
		return "lb1 MASTER again after " + secs(took)
	})

	d.step("after the preemption", "The long-lived connection, now that lb1 has the VIP again", func() string {
		s, err := conn.Get()
		if err != nil {
			d.printf("    Lost: %v.\n"+
				"    lb1 did not know it: connection sync had not carried it there (docs/lab.md).\n", err)
			return "lost"
		}
		d.printf("    Still answers: %s, through lb1.\n", s)
		return "still answers (" + s + ")"
	})

	d.tr.Stop()
	d.summary()
}

// answered waits until n requests begun since since have been answered.
func (d *demo) answered(since time.Time, n int) {
	lab.WaitFor(d.t, 30*time.Second, fmt.Sprintf("%d requests answered", n), func() bool { return d.tr.Answered(since) >= n })
}

// failures reads "51, 2 failed (the first: ...)".
func failures(c lab.Tally) string {
	if c.Failed == 0 {
		return fmt.Sprintf("%d, none failed", c.Requests)
	}
	return fmt.Sprintf("%d, %d failed, the first with\n      %v", c.Requests, c.Failed, c.FirstError)
}

// servers reads "rs1 10, rs2 10, rs3 10".
func servers(c lab.Tally) string {
	_, s, _ := strings.Cut(c.String(), ": ")
	return s
}

// summary prints a table of the steps: time, requests and what happened.
func (d *demo) summary() {
	d.printf("\nSummary (requests: those that ended during the step)\n\n")
	w := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  #\tstep\ttook\trequests\tfailed\twhat happened")
	var res []lab.Result
	if d.tr != nil {
		res = d.tr.Results()
	}
	// A request counts in the step during which it ended: a failure is
	// seen when the event that caused it happened, also by a request begun
	// just before.
	inSteps := 0
	for i, s := range d.steps {
		req, failed := "-", "-"
		switch {
		case s.own != nil:
			req, failed = fmt.Sprint(s.own.Requests), fmt.Sprint(s.own.Failed)
		case s.traffic:
			c := lab.Count(res, lab.EndedIn(s.from, s.to))
			req, failed = fmt.Sprint(c.Requests), fmt.Sprint(c.Failed)
			inSteps += c.Failed
		}
		fmt.Fprintf(w, "%3d\t%s\t%s\t%s\t%s\t%s\n", i+1, s.name, secs(s.took), req, failed, s.note)
	}
	all := lab.Count(res, nil)
	if n := all.Failed - inSteps; n > 0 {
		fmt.Fprintf(w, "\t%s\t\t\t%d\t\n", "between the steps", n)
	}
	fmt.Fprintf(w, "\t%s\t\t%d\t%d\t%s\n", "background traffic, all steps", all.Requests, all.Failed, servers(all))
	w.Flush()
	// Why requests failed, step by step: what users would have seen.
	for i, s := range d.steps {
		if !s.traffic {
			continue
		}
		if c := lab.Count(res, lab.EndedIn(s.from, s.to)); c.Failed > 0 {
			d.printf("\nStep %d's first failure: %v", i+1, c.FirstError)
		}
	}
	d.printf("\n")
}
