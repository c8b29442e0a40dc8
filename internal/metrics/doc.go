// Package metrics exposes directord's state to Prometheus.
//
// New takes the function that returns the daemon's status snapshot (the
// model of package control). Each scrape reads one snapshot and turns it
// into gauges and counters, so that the metrics never disagree with what
// directorctl shows and the daemon keeps no second set of counters. Events
// that a snapshot cannot carry (every health-check probe and its latency)
// are reported through the ObserveCheck hook.
//
// Handler serves the exposition; Serve listens on a TCP address for the
// daemon's --metrics-address. The series, their labels and example queries
// are in docs/metrics.md.
//
// # Cardinality
//
// Per-real-server series are gauges only (up, weight, drained: three series
// per real server). Histograms are per checker type, never per real server:
// 10,000 real servers with a dozen buckets each would be too many series.
package metrics
