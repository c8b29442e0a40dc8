package metrics

import (
	"iter"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/directord/directord/internal/control"
)

// vrrpStates are the states every instance has a directord_vrrp_state
// series for, so that a dashboard sees a 0 → 1 edge on each transition.
var vrrpStates = [...]string{"INIT", "BACKUP", "MASTER", "FAULT"}

// The instance label of the VRRP series is vrrp_instance, not instance:
// Prometheus attaches its own instance label (the target) to every series
// and would rename a scraped one to exported_instance.
var (
	descBuildInfo = prometheus.NewDesc("directord_build_info",
		"Always 1; the version label is the running directord's.",
		[]string{"version"}, nil)
	descStartTime = prometheus.NewDesc("directord_start_time_seconds",
		"When directord started, in seconds since the Unix epoch.", nil, nil)

	descVRRPState = prometheus.NewDesc("directord_vrrp_state",
		"1 for the VRRP instance's current state, 0 for the others.",
		[]string{"vrrp_instance", "vrid", "interface", "state"}, nil)
	descVRRPMaster = prometheus.NewDesc("directord_vrrp_master",
		"1 while the VRRP instance is MASTER, else 0.",
		[]string{"vrrp_instance"}, nil)
	descVRRPHandedOver = prometheus.NewDesc("directord_vrrp_handed_over",
		"1 while an operator's hand-over (directorctl handover) holds the VRRP instance back, else 0.",
		[]string{"vrrp_instance"}, nil)
	descVRRPPriority = prometheus.NewDesc("directord_vrrp_priority",
		"The VRRP instance's configured priority.",
		[]string{"vrrp_instance"}, nil)
	descVRRPEffPriority = prometheus.NewDesc("directord_vrrp_effective_priority",
		"The VRRP instance's priority after tracked interfaces and scripts.",
		[]string{"vrrp_instance"}, nil)
	descVRRPTransitions = prometheus.NewDesc("directord_vrrp_transitions_total",
		"State transitions of the VRRP instance since start.",
		[]string{"vrrp_instance"}, nil)
	descVRRPSent = prometheus.NewDesc("directord_vrrp_adverts_sent_total",
		"VRRP advertisements the instance sent since start.",
		[]string{"vrrp_instance"}, nil)
	descVRRPReceived = prometheus.NewDesc("directord_vrrp_adverts_received_total",
		"VRRP advertisements the instance accepted since start.",
		[]string{"vrrp_instance"}, nil)
	descVRRPDropped = prometheus.NewDesc("directord_vrrp_adverts_dropped_total",
		"VRRP advertisements the instance dropped since start, by reason.",
		[]string{"vrrp_instance", "reason"}, nil)

	descRealUp = prometheus.NewDesc("directord_real_server_up",
		"1 while the real server's health checks pass, else 0.",
		[]string{"virtual_server", "real_server"}, nil)
	descRealWeight = prometheus.NewDesc("directord_real_server_weight",
		"The weight the kernel gets for the real server: 0 when drained or inhibited, -1 when it is left out of the kernel's table.",
		[]string{"virtual_server", "real_server"}, nil)
	descRealDrained = prometheus.NewDesc("directord_real_server_drained",
		"1 while an operator has drained the real server, else 0.",
		[]string{"virtual_server", "real_server"}, nil)
	descVSReals = prometheus.NewDesc("directord_virtual_server_real_servers",
		"Real servers of the virtual server whose health checks pass (up) or fail (down).",
		[]string{"virtual_server", "state"}, nil)
	descVSDigest = prometheus.NewDesc("directord_virtual_server_ipvs_digest_info",
		"Always 1; the digest label fingerprints the virtual server's IPVS services as the kernel holds them (scheduler, flags, destinations in order, weights), the same on every director that agrees.",
		[]string{"virtual_server", "digest"}, nil)
	descVSQuorum = prometheus.NewDesc("directord_virtual_server_quorum_up",
		"1 while the virtual server has its quorum of live real servers, else 0.",
		[]string{"virtual_server"}, nil)

	descIPVSOps = prometheus.NewDesc("directord_ipvs_operations_total",
		"IPVS operations (adds, edits, deletions) the reconciler sent to the kernel since start.", nil, nil)
	descIPVSErrors = prometheus.NewDesc("directord_ipvs_errors_total",
		"Syncs of the kernel's IPVS table that failed since start.", nil, nil)
	descIPVSLastSync = prometheus.NewDesc("directord_ipvs_last_sync_timestamp_seconds",
		"When a sync of the kernel's IPVS table last succeeded, in seconds since the Unix epoch; 0 before the first.", nil, nil)

	descBGPNeighborUp = prometheus.NewDesc("directord_bgp_neighbor_up",
		"1 while the BGP session with the neighbor is established, else 0.",
		[]string{"neighbor"}, nil)
	descBGPNeighborBFD = prometheus.NewDesc("directord_bgp_neighbor_bfd_up",
		"1 while the BFD session with the neighbor is up, else 0; only for neighbors with bfd.",
		[]string{"neighbor"}, nil)
	descBGPSent = prometheus.NewDesc("directord_bgp_neighbor_prefixes_sent",
		"Prefixes advertised to the neighbor.",
		[]string{"neighbor"}, nil)
	descBGPAnnounced = prometheus.NewDesc("directord_bgp_address_announced",
		"1 while the address is announced, else 0; reason says why (serving, no-quorum, not-programmed, vrrp-backup, drained, stopping).",
		[]string{"prefix", "reason"}, nil)
	descBGPDrained = prometheus.NewDesc("directord_bgp_drained",
		"1 while directorctl drain-director holds every route withdrawn, else 0.", nil, nil)

	descReloads = prometheus.NewDesc("directord_reloads_total",
		"Configuration reloads since start, by result (ok or failed).",
		[]string{"result"}, nil)
	descLastGoodReload = prometheus.NewDesc("directord_last_good_reload_timestamp_seconds",
		"When a configuration reload last succeeded, in seconds since the Unix epoch; 0 if none has since start.", nil, nil)
)

var statusDescs = []*prometheus.Desc{
	descBuildInfo, descStartTime,
	descVRRPState, descVRRPMaster, descVRRPHandedOver, descVRRPPriority, descVRRPEffPriority,
	descVRRPTransitions, descVRRPSent, descVRRPReceived, descVRRPDropped,
	descRealUp, descRealWeight, descRealDrained, descVSReals, descVSQuorum, descVSDigest,
	descIPVSOps, descIPVSErrors, descIPVSLastSync,
	descBGPNeighborUp, descBGPNeighborBFD, descBGPSent, descBGPAnnounced, descBGPDrained,
	descReloads, descLastGoodReload,
}

// statusCollector turns one status snapshot per scrape into metrics.
type statusCollector struct {
	snapshot func() control.Status
}

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range statusDescs {
		ch <- d
	}
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	collectStatus(c.snapshot(), ch)
}

// collectStatus emits the series of one snapshot. It never emits two
// series with the same labels, which would fail the scrape: an instance
// name or a real server seen twice keeps its first entry, and virtual
// servers sharing a name are told apart by their protocol or position
// (see labelledVirtualServers).
func collectStatus(s control.Status, ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}

	gauge(descBuildInfo, 1, s.Version)
	gauge(descStartTime, unixSeconds(s.Started))

	seenInstance := make(map[string]bool, len(s.Instances))
	for _, in := range s.Instances {
		if seenInstance[in.Name] {
			continue
		}
		seenInstance[in.Name] = true
		vrid := strconv.Itoa(int(in.VRID))
		known := false
		for _, st := range vrrpStates {
			known = known || st == in.State
			gauge(descVRRPState, bool01(st == in.State), in.Name, vrid, in.Interface, st)
		}
		if !known && in.State != "" {
			// A state this package does not know still shows, rather
			// than an instance with every state at 0.
			gauge(descVRRPState, 1, in.Name, vrid, in.Interface, in.State)
		}
		gauge(descVRRPMaster, bool01(in.State == "MASTER"), in.Name)
		gauge(descVRRPHandedOver, bool01(in.HandedOver), in.Name)
		gauge(descVRRPPriority, float64(in.Priority), in.Name)
		gauge(descVRRPEffPriority, float64(in.EffectivePriority), in.Name)
		counter(descVRRPTransitions, in.Transitions, in.Name)
		counter(descVRRPSent, in.AdvertsSent, in.Name)
		counter(descVRRPReceived, in.AdvertsReceived, in.Name)
		for reason, n := range in.Drops {
			counter(descVRRPDropped, n, in.Name, reason)
		}
	}

	for label, vs := range labelledVirtualServers(s.VirtualServers) {
		seenReal := make(map[string]bool, len(vs.Reals))
		up, down := 0, 0
		for _, r := range vs.Reals {
			if seenReal[r.Addr] {
				continue
			}
			seenReal[r.Addr] = true
			if r.Alive {
				up++
			} else {
				down++
			}
			gauge(descRealUp, bool01(r.Alive), label, r.Addr)
			gauge(descRealWeight, float64(r.EffectiveWeight), label, r.Addr)
			gauge(descRealDrained, bool01(r.Drained), label, r.Addr)
		}
		gauge(descVSReals, float64(up), label, "up")
		gauge(descVSReals, float64(down), label, "down")
		gauge(descVSQuorum, bool01(vs.QuorumUp), label)
		if vs.Digest != "" {
			gauge(descVSDigest, 1, label, vs.Digest)
		}
	}

	counter(descIPVSOps, s.IPVS.Operations)
	counter(descIPVSErrors, s.IPVS.Errors)
	gauge(descIPVSLastSync, unixSeconds(s.IPVS.LastSync))

	if b := s.BGP; b != nil {
		gauge(descBGPDrained, bool01(b.Drained))
		seen := map[string]bool{}
		for _, n := range b.Neighbors {
			if seen[n.Address] {
				continue
			}
			seen[n.Address] = true
			gauge(descBGPNeighborUp, bool01(n.State == "established"), n.Address)
			if n.BFD != "" {
				gauge(descBGPNeighborBFD, bool01(n.BFD == "up"), n.Address)
			}
			gauge(descBGPSent, float64(n.PrefixesSent), n.Address)
		}
		seen = map[string]bool{}
		for _, a := range b.Addresses {
			if seen[a.Prefix] {
				continue
			}
			seen[a.Prefix] = true
			gauge(descBGPAnnounced, bool01(a.Announced), a.Prefix, a.Reason)
		}
	}

	counter(descReloads, s.ReloadsOK, "ok")
	counter(descReloads, s.ReloadsFailed, "failed")
	gauge(descLastGoodReload, unixSeconds(s.LastGoodReload))
}

// labelledVirtualServers yields each virtual server with its
// virtual_server label: its Name ("192.0.2.1 443", "fwmark 1", "group
// web"), unique unless the same address and port is served over two
// protocols. Virtual servers that share a Name are labelled "Name
// PROTOCOL" ("192.0.2.1 53 UDP"), and if that is still shared, "Name
// (Position)": Position changes when the file is edited, so it is for the
// odd case only and the common ones keep stable series. A virtual server
// whose label is still not unique (the same Name at the same Position) is
// left out.
func labelledVirtualServers(vss []control.VirtualServer) iter.Seq2[string, *control.VirtualServer] {
	return func(yield func(string, *control.VirtualServer) bool) {
		names := make(map[string]int, len(vss))
		withProto := make(map[string]int, len(vss))
		for _, vs := range vss {
			names[vs.Name]++
			withProto[vs.Name+" "+vs.Protocol]++
		}
		seen := make(map[string]bool, len(vss))
		for i := range vss {
			vs := &vss[i]
			l := vs.Name
			switch {
			case names[l] == 1:
			case vs.Protocol != "" && withProto[vs.Name+" "+vs.Protocol] == 1:
				l = vs.Name + " " + vs.Protocol
			default:
				l = vs.Name + " (" + vs.Position + ")"
			}
			if seen[l] {
				continue
			}
			seen[l] = true
			if !yield(l, vs) {
				return
			}
		}
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// unixSeconds is t in seconds since the Unix epoch, or 0 for the zero time
// (an event that has not happened).
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
