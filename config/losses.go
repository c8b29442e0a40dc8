package config

// A loss is what an operator loses when the file relies on keywords that
// directord does not support: -t prints one line per loss, after its
// per-line warnings, naming the keywords and where they are
// (docs/migration.md).
type loss struct {
	what     string
	keywords []string
}

// losses groups every keyword that some block lists as not supported by
// what it did for keepalived. TestEveryUnsupportedKeywordHasALoss keeps
// it complete.
var losses = []loss{
	{"nothing follows BFD sessions: instances and real servers ignore them",
		[]string{"bfd_instance", "track_bfd", "BFD_CHECK"}},
	{"the real servers are not checked by these checkers",
		[]string{"PING_CHECK", "FILE_CHECK"}},
	{"no ipvlan interface",
		[]string{"use_ipvlan"}},
	{"no gratuitous ARP groups",
		[]string{"garp_group"}},
	{"static addresses, routes and rules are not followed as a track_group",
		[]string{"track_group"}},
	{"no VRF: the instance's addresses and adverts use the main routing table",
		[]string{"vrf"}},
	{"firewall rules beyond the drop tables of masters without accept mode (link-local sets, ipsets) are not made",
		[]string{"vrrp_ipsets", "namespace_with_ipsets", "nftables_ifindex"}},
	{"no nftables rules for IPVS (the fwmarks of virtual servers on address ranges)",
		[]string{"nftables_ipvs", "nftables_ipvs_priority", "nftables_ipvs_start_fwmark"}},
	{"no SNMP or DBus (use directorctl and the Prometheus metrics)",
		[]string{"snmp_socket", "enable_traps", "enable_snmp_vrrp", "enable_snmp_keepalived", "enable_snmp_rfc",
			"enable_snmp_rfcv2", "enable_snmp_rfcv3", "enable_snmp_checker", "enable_dbus", "dbus_service_name",
			"snmp_name"}},
	{"the startup and shutdown scripts do not run",
		[]string{"startup_script", "startup_script_timeout", "shutdown_script", "shutdown_script_timeout"}},
	{"no notification of the states at a reload, nor of the real servers' first state",
		[]string{"fifo_write_vrrp_states_on_reload", "rs_init_notifies"}},
	{"no notify_master_rx_lower_pri script",
		[]string{"notify_master_rx_lower_pri"}},
	{"keepalived's reload tooling (timed reloads, saved copies): directord checks every reload itself and refuses a bad file",
		[]string{"reload_check_config", "include_check", "reload_time_file", "reload_repeat", "reload_file",
			"config_save_dir", "tmp_config_directory"}},
	{"several keepalived instances on one host, told apart by name and pid folder: directord's pid file is -p's",
		[]string{"instance", "use_pid_dir", "data_use_instance"}},
	{"link state is followed through netlink, not polled, and acted on at once",
		[]string{"linkbeat_use_polling", "linkbeat_interfaces", "interface_up_down_delays"}},
	{"the down timer counts the RFC's 3 advert intervals",
		[]string{"vrrp_down_timer_adverts", "down_timer_adverts"}},
	{"unicast adverts carry the RFC's checksum only: a peer that wants the old one does not hear them",
		[]string{"old_unicast_checksum"}},
	{"keepalived's per-process tuning and names, which directord, one process, has no use for",
		[]string{"process_names", "process_name", "vrrp_process_name", "checker_process_name", "lvs_process_name",
			"bfd_process_name", "checker_priority", "bfd_priority", "vrrp_no_swap", "checker_no_swap", "bfd_no_swap",
			"checker_rt_priority", "bfd_rt_priority", "vrrp_cpu_affinity", "checker_cpu_affinity", "bfd_cpu_affinity",
			"vrrp_rlimit_rttime", "checker_rlimit_rttime", "bfd_rlimit_rttime", "vrrp_rlimit_rtime",
			"checker_rlimit_rtime", "bfd_rlimit_rtime", "child_wait_time"}},
	{"keepalived's socket buffer sizes: directord sizes its own",
		[]string{"vrrp_netlink_cmd_rcv_bufs", "vrrp_netlink_cmd_rcv_bufs_force", "vrrp_netlink_monitor_rcv_bufs",
			"vrrp_netlink_monitor_rcv_bufs_force", "lvs_netlink_cmd_rcv_bufs", "lvs_netlink_cmd_rcv_bufs_force",
			"lvs_netlink_monitor_rcv_bufs", "lvs_netlink_monitor_rcv_bufs_force",
			"vrrp_rx_bufs_policy", "vrrp_rx_bufs_multiplier", "kernel_rx_buf_size"}},
	{"logging choices: every checker failure, adverts of unknown VRIDs, an instance's debug level",
		[]string{"checker_log_all_failures", "log_unknown_vrids", "debug"}},
	{"keepalived's random seed and umask: directord's own",
		[]string{"random_seed", "umask"}},
}

// lossOf maps a keyword to what it did.
var lossOf = func() map[string]string {
	m := map[string]string{}
	for _, l := range losses {
		for _, k := range l.keywords {
			m[k] = l.what
		}
	}
	return m
}()

// Loss says what an operator loses with a keyword directord does not
// support (one of the lines of -t's summary), or "" when it is not one.
func Loss(keyword string) string { return lossOf[keyword] }

// LossLine is one line of -t's summary: a function that the file relies
// on and directord does not provide, with the keywords that ask for it.
type LossLine struct {
	What string
	Uses []Diagnostic // the "not supported" diagnostics, in the file's order
}

// Losses groups the "not supported" diagnostics of a load by what the
// operator loses, in the order of each loss's first use; a keyword
// without a loss of its own (added since) gets one line by its message.
func Losses(diags Diagnostics) []LossLine {
	var out []LossLine
	at := map[string]int{}
	for _, d := range diags {
		if !d.Unsupported {
			continue
		}
		what := Loss(d.Keyword)
		if what == "" {
			what = d.Keyword + ": " + d.Message
		}
		i, ok := at[what]
		if !ok {
			i = len(out)
			at[what] = i
			out = append(out, LossLine{What: what})
		}
		out[i].Uses = append(out[i].Uses, d)
	}
	return out
}
