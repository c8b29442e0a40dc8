package main

import "fmt"

// labRows are integration/lab's benchmarks (make bench-lab), in the
// guest: a director's directord SIGKILLed under traffic and a real
// server added, each in the active-active lab (directord's figure) and
// in the VRRP pair with connection sync (the reference); for the remap,
// the reference is a consistent hash's ideal, 1/N of the flows.
func (r *results) labRows() []row {
	var out []row
	const active, pair = "DirectorLoss/active", "DirectorLoss/pair"
	conns := "20 long-lived connections, a request every second on each, 10 new connections a second"
	ref := "VRRP pair, master killed"

	x := r.pair("a director's directord SIGKILLed ("+conns+"), active-active lab: long-lived connections surviving on their real server", active, "survived-%", pair, "survived-%", ref, "%", 1)
	x.guest = true
	if lost, ok := r.get(active, "lost-cpu-%"); ok {
		x.why = fmt.Sprintf("the machine withheld %.0f %% of the time from the kill to the end from an ordinary process in the guest (see Active-active directors beside the VRRP pair)", lost)
	}
	if x.haveD {
		x.aim, x.verdict = "all", verdict(&x, x.d >= 100)
	}
	out = append(out, x)

	x = r.pair("the same loss: from the kill to the start of the last new connection that failed (0: none failed)", active, "last-failure-s", pair, "last-failure-s", ref, "s", 1)
	x.guest = true
	out = append(out, x)

	x = r.count("the same loss: new connections begun after the kill that failed", active, pair, ref)
	out = append(out, x)

	x = r.pair("the same loss: the slowest new connection answered (begun after the kill)", active, "slowest-new-s", pair, "slowest-new-s", ref, "s", 1)
	x.guest = true
	out = append(out, x)

	x = r.pair("the same loss: from the kill to the router's route without that director (the pair: the backup holding the VIP)", active, "converged-s", pair, "converged-s", ref, "s", 1)
	x.guest = true
	out = append(out, x)

	// Remapping: the ideal is 1/N, N the real servers after.
	for _, lab := range []struct{ name, label string }{
		{"active", "active-active lab, mh with mh-port"},
		{"pair", "VRRP pair, rr"},
	} {
		name := "Remap/" + lab.name
		label := fmt.Sprintf("a real server added (3 to 4), %s: new flows that go to another real server than before", lab.label)
		if rep, ok := r.get(name, "repeat-remapped-%"); ok {
			label += fmt.Sprintf(" (%s to the new one, %s among the old; sent again with nothing changed: %s moved)",
				num(r.m[name]["to-new-%"], "%"), num(r.m[name]["between-old-%"], "%"), num(rep, "%"))
		}
		x = r.pair(label, name, "remapped-%", name, "ideal-%", "ideal, 1/N", "%", 1)
		x.guest = true
		if lab.name == "pair" && x.haveD {
			x.aim = "not meaningful: rr ignores the flow"
		}
		out = append(out, x)
	}
	return out
}

// count is a row of "k of n" for directord (dName) and the reference
// (rName), with the ratio of their fractions.
func (r *results) count(figure, dName, rName, refLabel string) row {
	x := row{figure: figure, guest: true}
	df, dok := r.get(dName, "failed-new")
	dn, _ := r.get(dName, "new")
	rf, rok := r.get(rName, "failed-new")
	rn, _ := r.get(rName, "new")
	x.haveD, x.hvR = dok, rok
	if dok {
		x.d = df
		x.directord = fmt.Sprintf("%.0f of %.0f", df, dn)
	}
	x.reference = refLabel + ": not measured"
	if rok {
		x.ref = rf
		x.reference = fmt.Sprintf("%s: %.0f of %.0f", refLabel, rf, rn)
		if dok && rf != 0 && dn != 0 && rn != 0 {
			x.ratio = fmt.Sprintf("%.2f", (df/dn)/(rf/rn))
		}
	}
	return x
}
