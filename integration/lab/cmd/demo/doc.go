// Command demo shows a whole directord pair at work in the lab of package
// lab: a VIP that survives a director's death, traffic spread over real
// servers by direct routing, a real server taken out of the pool and put
// back, an established connection carried across a failover. It prints
// each step with the time it took, and a summary.
//
// make demo builds it with directord and directorctl and runs it as root
// in the User-Mode Linux guest, whose kernel has IPVS (docs/lab.md):
//
//	integration/uml/run.sh -- bin/uml/lab-demo -directord bin/uml/directord -directorctl bin/uml/directorctl
//
// Whatever happens, it removes what it made (namespaces, processes)
// before it exits, and says so.
package main
