package config

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"regexp"
	"time"
)

// Config is a resolved configuration: every default applied, every value
// typed, every reference (track_script, sync group member, virtual server
// group, lvs_sync_daemon instance) checked. It is what directord runs.
type Config struct {
	// Files lists the files read, the main one first, then includes in the
	// order they were first read.
	Files               []string              `json:"files"`
	Global              Global                `json:"global_defs"`
	SSL                 *SSL                  `json:"ssl,omitempty"`
	Scripts             []*VRRPScript         `json:"vrrp_scripts,omitempty"`
	SyncGroups          []*SyncGroup          `json:"vrrp_sync_groups,omitempty"`
	Instances           []*Instance           `json:"vrrp_instances,omitempty"`
	VirtualServerGroups []*VirtualServerGroup `json:"virtual_server_groups,omitempty"`
	VirtualServers      []*VirtualServer      `json:"virtual_servers,omitempty"`
	// TrackFiles are the track_file (vrrp_track_file) blocks that some
	// instance or sync group tracks.
	TrackFiles []*TrackFile `json:"track_files,omitempty"`
	// StaticAddresses, StaticRoutes and StaticRules (static_ipaddress,
	// static_routes, static_rules) are held from start to stop, whatever
	// the instances' states; a static address without dev is on
	// default_interface.
	StaticAddresses []VIP   `json:"static_ipaddress,omitempty"`
	StaticRoutes    []Route `json:"static_routes,omitempty"`
	StaticRules     []Rule  `json:"static_rules,omitempty"`
	// TrackProcesses are the vrrp_track_process blocks.
	TrackProcesses []*TrackProcess `json:"track_processes,omitempty"`

	// Differs lists, in the order of the file, each keyword the file uses
	// that directord runs differently from keepalived (Differences), for
	// -t's summary.
	Differs []Difference `json:"-"`
}

// Difference is one use of a keyword that directord runs differently from
// keepalived: where, which, and how (the text of Differences). A large
// file uses some such keyword once per real server, so what differs is
// one DifferenceKind that every use of the keyword shares.
type Difference struct {
	Pos Pos
	*DifferenceKind
}

// DifferenceKind is a keyword that directord runs differently from
// keepalived, with how: an entry of Differences.
type DifferenceKind struct {
	Block   string
	Keyword string
	How     string
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: %s (in %s): %s", d.Pos, d.Keyword, d.Block, d.How)
}

// Global is global_defs.
type Global struct {
	// RouterID identifies this director in logs and notifications; it
	// defaults to the host name.
	RouterID             string `json:"router_id"`
	EnableScriptSecurity bool   `json:"enable_script_security"`
	// ScriptUser and ScriptGroup run scripts that name no user; empty means
	// keepalived_script if that user exists, else root (resolved at run time).
	ScriptUser  string `json:"script_user,omitempty"`
	ScriptGroup string `json:"script_group,omitempty"`

	// ProcessMonitorRcvBufs is the receive buffer of the process events
	// socket of vrrp_track_process (0: the kernel's default), set past
	// the kernel's rmem_max with ProcessMonitorRcvBufsForce.
	ProcessMonitorRcvBufs      uint32 `json:"process_monitor_rcv_bufs,omitempty"`
	ProcessMonitorRcvBufsForce bool   `json:"process_monitor_rcv_bufs_force,omitempty"`

	SyncDaemon     *SyncDaemon  `json:"lvs_sync_daemon,omitempty"`
	LVSTimeouts    *LVSTimeouts `json:"lvs_timeouts,omitempty"`
	LVSFlush       bool         `json:"lvs_flush"`
	LVSFlushOnStop FlushOnStop  `json:"lvs_flush_on_stop,omitempty"`

	VRRPVersion          int           `json:"vrrp_version"`
	MCastGroup4          netip.Addr    `json:"vrrp_mcast_group4"`
	MCastGroup6          netip.Addr    `json:"vrrp_mcast_group6"`
	Garp                 GarpSettings  `json:"garp"`
	GarpInterval         time.Duration `json:"vrrp_garp_interval"`
	GnaInterval          time.Duration `json:"vrrp_gna_interval"`
	CheckUnicastSrc      bool          `json:"vrrp_check_unicast_src"`
	SkipCheckAdvAddr     bool          `json:"vrrp_skip_check_adv_addr"`
	Strict               bool          `json:"vrrp_strict"`
	LowerPrioNoAdvert    bool          `json:"vrrp_lower_prio_no_advert"`
	HigherPrioSendAdvert bool          `json:"vrrp_higher_prio_send_advert"`
	StartupDelay         time.Duration `json:"vrrp_startup_delay"`
	// DynamicInterfaces (dynamic_interfaces): an instance whose interface
	// does not exist yet starts in FAULT and runs once it is created;
	// AllowIfChanges (its allow_if_changes) lets an interface come back
	// as another kind (a macvlan or not, another parent).
	DynamicInterfaces bool `json:"dynamic_interfaces,omitempty"`
	AllowIfChanges    bool `json:"allow_if_changes,omitempty"`
	// DisableLocalIGMP (disable_local_igmp): no IGMP reports for the
	// link-local groups (224.0.0.0/24, VRRP's 224.0.0.18 among them)
	// while VRRP runs: net.ipv4.igmp_link_local_mcast_reports 0, as
	// keepalived sets it, restored at the end.
	DisableLocalIGMP bool `json:"disable_local_igmp,omitempty"`
	// VMACPrefix names use_vmac's macvlans that are not named (vmac_prefix,
	// default "vrrp").
	VMACPrefix string `json:"vmac_prefix,omitempty"`
	// VMACAddrPrefix names the macvlans of use_vmac_addr and of an
	// address's use_vmac (vmac_addr_prefix; default VMACPrefix).
	VMACAddrPrefix string `json:"vmac_addr_prefix,omitempty"`
	// Nice is the nice value directord's threads run at (vrrp_priority);
	// directord's default is -15, so that adverts leave on time on a busy
	// host.
	Nice int `json:"vrrp_priority"`
	// RTPriority, when not 0, runs directord's threads in SCHED_RR at this
	// priority (vrrp_rt_priority).
	RTPriority int `json:"vrrp_rt_priority,omitempty"`
	// MaxAutoPriority (max_auto_priority) is the highest SCHED_RR
	// priority directord raises itself to, one step at a time, each time
	// its timers fire more than MinAutoPriorityDelay
	// (min_auto_priority_delay, 1 s by default) late: 0 never (keepalived's
	// default; -1 says so too), 99 for the keyword without a value.
	MaxAutoPriority      int           `json:"max_auto_priority,omitempty"`
	MinAutoPriorityDelay time.Duration `json:"min_auto_priority_delay,omitempty"`
	// DefaultInterface (default_interface, eth0 by default as in
	// keepalived) holds the static_ipaddress lines that name no dev.
	DefaultInterface string `json:"default_interface,omitempty"`
	// NotifyFIFO (notify_fifo) receives every VRRP and LVS event line,
	// VRRPNotifyFIFO (vrrp_notify_fifo) the VRRP ones, LVSNotifyFIFO
	// (lvs_notify_fifo) the LVS ones; nil when not given.
	NotifyFIFO *NotifyFIFO `json:"notify_fifo,omitempty"`
	// NotifyPriorityChanges (vrrp_notify_priority_changes) is the
	// default of the instances' notify_priority_changes.
	NotifyPriorityChanges bool        `json:"vrrp_notify_priority_changes,omitempty"`
	VRRPNotifyFIFO        *NotifyFIFO `json:"vrrp_notify_fifo,omitempty"`
	LVSNotifyFIFO         *NotifyFIFO `json:"lvs_notify_fifo,omitempty"`
	// Email is where e-mail alerts go (notification_email, smtp_server,
	// ...); nil when global_defs names none of its keywords.
	Email *Email `json:"email,omitempty"`
	// BGP is the bgp block (a directord extension); nil when not given.
	BGP *BGP `json:"bgp,omitempty"`

	// NetNamespace (top-level net_namespace) is the network namespace
	// directord runs in, /run/netns/NAME; empty: the one it was started
	// in.
	NetNamespace string `json:"net_namespace,omitempty"`
	// NetNamespaceIPVS (top-level net_namespace_ipvs) is where the IPVS
	// calls go: nil, directord's own namespace; "", the host's (PID 1's);
	// else /run/netns/NAME.
	NetNamespaceIPVS *string `json:"net_namespace_ipvs,omitempty"`
	netnsPos         Pos
	netnsIPVSPos     Pos

	// NFTable (nftables NAME; vrrp_iptables too, as keepalived 2.2.7
	// built without iptables reads it) names the nftables table that
	// drops traffic to the VIPs of masters without accept mode; empty:
	// keepalived's "keepalived", made only when such an instance exists.
	NFTable string `json:"nftables,omitempty"`
	// NFTPriority is nftables_priority, the chains' priority; nil: -1.
	NFTPriority *int32 `json:"nftables_priority,omitempty"`
	// NFTCounters (nftables_counters) adds a counter to each drop rule.
	NFTCounters bool `json:"nftables_counters,omitempty"`

	// smtp_alert, smtp_alert_vrrp and smtp_alert_checker: nil when not given.
	smtpAlert, smtpAlertVRRP, smtpAlertChecker *bool
	bgpWithdrawWait                            *time.Duration
	set                                        map[string]Pos // keywords given, for defaults that depend on them
}

// Email is global_defs' e-mail alert settings. Alerts are mailed only
// when both To and Server are set, as keepalived.
type Email struct {
	// To are the notification_email addresses, each its own RCPT TO.
	To []string `json:"notification_email,omitempty"`
	// From is notification_email_from; empty means keepalived's default,
	// USER@HOSTNAME of the user directord runs as (resolved when sending).
	From string `json:"notification_email_from,omitempty"`
	// Server is smtp_server: HOST:PORT, an address or a name, port 25 by
	// default; a name is resolved when mailing.
	Server string `json:"smtp_server,omitempty"`
	// HeloName is smtp_helo_name; empty means the host name.
	HeloName string `json:"smtp_helo_name,omitempty"`
	// ConnectTimeout (smtp_connect_timeout, 30 s) bounds the connection
	// and each reply of the server.
	ConnectTimeout time.Duration `json:"smtp_connect_timeout"`
	// NoFaults (no_email_faults) mails no VRRP FAULT transition.
	NoFaults bool `json:"no_email_faults,omitempty"`
	// NoCheckerEmails (no_checker_emails) is accepted; directord mails
	// only real server transitions anyway (see docs/configuration.md).
	NoCheckerEmails bool `json:"no_checker_emails,omitempty"`
}

// Enabled reports whether alerts can be mailed at all: some address and
// a server.
func (e *Email) Enabled() bool { return e != nil && len(e.To) > 0 && e.Server != "" }

// GarpSettings are the gratuitous ARP / unsolicited NA timings, global
// (vrrp_garp_*) or per instance (garp_*).
type GarpSettings struct {
	// MasterDelay is the delay before the second burst after becoming
	// master; 0 sends no second burst.
	MasterDelay  time.Duration `json:"master_delay"`
	MasterRepeat int           `json:"master_repeat"`
	// LowerPrioDelay and LowerPrioRepeat apply when a master hears a lower
	// priority advert.
	LowerPrioDelay  time.Duration `json:"lower_prio_delay"`
	LowerPrioRepeat int           `json:"lower_prio_repeat"`
	// MasterRefresh resends while master; 0 never.
	MasterRefresh       time.Duration `json:"master_refresh"`
	MasterRefreshRepeat int           `json:"master_refresh_repeat"`
	// ExtraIf is garp_extra_if (vrrp_garp_extra_if, the deprecated
	// vmac_garp_intvl): while master, one gratuitous ARP or NA per this
	// period on each other interface that holds the instance's addresses,
	// with ExtraIfAll ("all"; without it keepalived sends only on the
	// macvlans of use_vmac_addr, which directord does not make, so the
	// resolved period is then 0). 0: none.
	ExtraIf    time.Duration `json:"extra_if,omitempty"`
	ExtraIfAll bool          `json:"extra_if_all,omitempty"`
}

// SyncDaemon is lvs_sync_daemon: the kernel's IPVS connection sync.
type SyncDaemon struct {
	Pos       Pos    `json:"pos"`
	Interface string `json:"interface"`
	// Instance is the VRRP instance whose state the daemons follow; empty
	// runs master and backup daemons together for as long as directord runs.
	Instance string     `json:"instance,omitempty"`
	SyncID   int        `json:"syncid"` // defaults to the instance's VRID, or 0
	MaxLen   int        `json:"maxlen,omitempty"`
	Port     int        `json:"port"`
	TTL      int        `json:"ttl,omitempty"`
	Group    netip.Addr `json:"group"`
}

// LVSTimeouts is lvs_timeouts; a zero value leaves the kernel's setting.
type LVSTimeouts struct {
	TCP    time.Duration `json:"tcp,omitempty"`
	TCPFin time.Duration `json:"tcpfin,omitempty"`
	UDP    time.Duration `json:"udp,omitempty"`
}

// SSL is the global SSL block used by SSL_GET.
type SSL struct {
	Pos         Pos    `json:"pos"`
	Password    string `json:"password,omitempty"`
	CA          string `json:"ca,omitempty"`
	Certificate string `json:"certificate,omitempty"`
	Key         string `json:"key,omitempty"`
}

// Script is a command run by directord: a notify script, a vrrp_script, a
// MISC_CHECK. Command is the line as written; Args is it split into words
// (blanks separate, single quotes group).
type Script struct {
	// Pos is where the script is given, for messages about it; left out
	// of the JSON (and so of comparisons between configurations).
	Pos     Pos      `json:"-"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	User    string   `json:"user,omitempty"`
	Group   string   `json:"group,omitempty"`
}

// Notify holds the notify scripts of an instance or sync group.
type Notify struct {
	Master  *Script `json:"notify_master,omitempty"`
	Backup  *Script `json:"notify_backup,omitempty"`
	Fault   *Script `json:"notify_fault,omitempty"`
	Stop    *Script `json:"notify_stop,omitempty"`
	Deleted *Script `json:"notify_deleted,omitempty"`
	// Any runs on every transition with keepalived's four extra arguments
	// (GROUP|INSTANCE, name, state, priority).
	Any *Script `json:"notify,omitempty"`
}

// VRRPScript is a vrrp_script block.
type VRRPScript struct {
	Pos      Pos           `json:"pos"`
	Name     string        `json:"name"`
	Script   *Script       `json:"script"`
	Interval time.Duration `json:"interval"`
	Timeout  time.Duration `json:"timeout"`
	Weight   int           `json:"weight"`
	Reverse  bool          `json:"reverse"`
	Rise     int           `json:"rise"`
	Fall     int           `json:"fall"`
	InitFail bool          `json:"init_fail"`
}

// SyncGroup is a vrrp_sync_group: instances that change state together.
type SyncGroup struct {
	Pos             Pos               `json:"pos"`
	Name            string            `json:"name"`
	Members         []string          `json:"group"`
	TrackInterfaces []TrackInterface  `json:"track_interface,omitempty"`
	TrackScripts    []TrackScript     `json:"track_script,omitempty"`
	TrackFiles      []TrackFileUse    `json:"track_file,omitempty"`
	TrackProcesses  []TrackProcessUse `json:"track_process,omitempty"`
	Notify          Notify            `json:"notify"`
	// NotifyPriorityChanges is the group's notify_priority_changes, the
	// default of its members'; nil when not given.
	NotifyPriorityChanges *bool `json:"notify_priority_changes,omitempty"`
	// TrackingWeight (sync_group_tracking_weight, or the deprecated
	// global_tracking) keeps members' tracking weights instead of zeroing them.
	TrackingWeight bool `json:"sync_group_tracking_weight"`
	// SMTPAlert: the group's transitions are mailed (smtp_alert, else
	// global_defs' smtp_alert_vrrp, else smtp_alert, else no; and only
	// when global_defs' Email is enabled).
	SMTPAlert bool `json:"smtp_alert,omitempty"`

	memberPos []Pos // where each member is named
	smtpAlert *bool
}

// TrackInterface is one track_interface entry. Weight 0 means the instance
// goes to FAULT while the interface is down.
type TrackInterface struct {
	Name    string `json:"name"`
	Weight  int    `json:"weight"`
	Reverse bool   `json:"reverse,omitempty"`
	pos     Pos
}

// TrackScript is one track_script entry; Weight is the script's own unless
// given here.
type TrackScript struct {
	Name    string `json:"name"`
	Weight  int    `json:"weight"`
	Reverse bool   `json:"reverse,omitempty"`
	pos     Pos
}

// Instance is a vrrp_instance.
type Instance struct {
	Pos       Pos    `json:"pos"`
	Name      string `json:"name"`
	State     State  `json:"state"` // the initial state
	Interface string `json:"interface,omitempty"`
	VRID      int    `json:"virtual_router_id"`
	Priority  int    `json:"priority"`
	// AdvertInt is whole seconds for VRRPv2, centiseconds for VRRPv3.
	AdvertInt time.Duration `json:"advert_int"`
	Version   int           `json:"version"`
	// Family is inet or inet6, from the first virtual address.
	Family       Family        `json:"family"`
	Preempt      bool          `json:"preempt"`
	PreemptDelay time.Duration `json:"preempt_delay"`
	Auth         *Auth         `json:"authentication,omitempty"`

	VIPs         []VIP   `json:"virtual_ipaddress"`
	ExcludedVIPs []VIP   `json:"virtual_ipaddress_excluded,omitempty"`
	Routes       []Route `json:"virtual_routes,omitempty"`
	Rules        []Rule  `json:"virtual_rules,omitempty"`

	MCastSrcIP         netip.Addr    `json:"mcast_src_ip,omitzero"`
	MCastDstIP         netip.Addr    `json:"mcast_dst_ip,omitzero"`
	UnicastSrcIP       netip.Addr    `json:"unicast_src_ip,omitzero"`
	UnicastPeers       []UnicastPeer `json:"unicast_peer,omitempty"`
	UnicastTTL         int           `json:"unicast_ttl"`
	UnicastFaultNoPeer bool          `json:"unicast_fault_no_peer,omitempty"`
	CheckUnicastSrc    bool          `json:"check_unicast_src"`
	TrackSrcIP         bool          `json:"track_src_ip,omitempty"`

	TrackInterfaces  []TrackInterface  `json:"track_interface,omitempty"`
	TrackScripts     []TrackScript     `json:"track_script,omitempty"`
	TrackFiles       []TrackFileUse    `json:"track_file,omitempty"`
	TrackProcesses   []TrackProcessUse `json:"track_process,omitempty"`
	DontTrackPrimary bool              `json:"dont_track_primary,omitempty"`

	Notify Notify `json:"notify"`
	// SMTPAlert: the instance's transitions are mailed (smtp_alert, else
	// global_defs' smtp_alert_vrrp, else smtp_alert, else no; and only
	// when global_defs' Email is enabled).
	SMTPAlert bool `json:"smtp_alert,omitempty"`
	// NotifyPriorityChanges writes MASTER_PRIORITY and BACKUP_PRIORITY
	// lines to the notify FIFOs when the effective priority changes: the
	// instance's notify_priority_changes, else its sync group's, else
	// vrrp_notify_priority_changes.
	NotifyPriorityChanges bool         `json:"notify_priority_changes,omitempty"`
	Garp                  GarpSettings `json:"garp"`
	Accept                bool         `json:"accept"`
	Strict                bool         `json:"strict_mode"`
	SkipCheckAdvAddr      bool         `json:"skip_check_adv_addr"`
	LowerPrioNoAdvert     bool         `json:"lower_prio_no_advert"`
	HigherPrioSendAdvert  bool         `json:"higher_prio_send_advert"`
	PromoteSecondaries    bool         `json:"promote_secondaries,omitempty"`
	// ChecksumAsV2 sends VRRPv3 over IPv4 with the message-only checksum of
	// RFC 9568 (keepalived's v3_checksum_as_v2); both forms are accepted.
	ChecksumAsV2 bool `json:"v3_checksum_as_v2,omitempty"`
	// SyncGroup is the vrrp_sync_group this instance belongs to, if any.
	SyncGroup string `json:"sync_group,omitempty"`
	// VMAC is use_vmac: the instance runs on a macvlan of Interface that
	// carries the VRRP virtual MAC; nil without it.
	VMAC *VMAC `json:"use_vmac,omitempty"`
	// VMACAddr is use_vmac_addr: the addresses on another interface than
	// the instance's (or of the other family) go on a macvlan of that
	// interface with the instance's virtual MAC, as keepalived makes it;
	// AddrVMACs are those macvlans (an address's own use_vmac asks for
	// one too), resolved.
	VMACAddr  bool        `json:"use_vmac_addr,omitempty"`
	AddrVMACs []*AddrVMAC `json:"addr_vmacs,omitempty"`

	set       map[string]Pos // keywords given, for defaults that depend on them
	smtpAlert *bool
}

// VMAC is an instance's use_vmac [NAME] [MAC] and vmac_xmit_base, resolved:
// keepalived's macvlan of the instance's interface, in private mode, with
// the VRRP virtual MAC (RFC 5798 section 7.3).
type VMAC struct {
	Pos Pos `json:"pos"`
	// Name is the macvlan's: the one given, else vmac_prefix (default
	// "vrrp"), a dot and the VRID, as keepalived names it (vrrp.51).
	Name string `json:"name"`
	// MAC is the address given, else 00:00:5e:00:01:VRID (IPv4) or
	// 00:00:5e:00:02:VRID (IPv6).
	MAC string `json:"mac"`
	// XmitBase is vmac_xmit_base: adverts leave on Interface itself, not
	// on the macvlan (which still carries the addresses).
	XmitBase bool `json:"xmit_base,omitempty"`
	// given: the MAC was configured (hw) or its first five octets (vrid:
	// the VRID is the sixth); name: the name was.
	hw      [6]byte
	hwGiven bool
	hwVRID  bool
	named   bool
}

// AddrDev is the device an instance adds a virtual address to: the VIP's
// dev, else the instance's interface, or the instance's macvlan for an
// address of the instance's family on the instance's interface (use_vmac;
// keepalived's vrrp_complete_instance).
func (in *Instance) AddrDev(v VIP) string {
	if v.VMACDev != "" {
		return v.VMACDev
	}
	dev := v.Dev
	if dev == "" {
		dev = in.Interface
	}
	if in.VMAC != nil && dev == in.Interface && family(v.Prefix.Addr()) == in.Family {
		return in.VMAC.Name
	}
	return dev
}

// Auth is VRRPv2 authentication.
type Auth struct {
	Type AuthType `json:"auth_type"`
	Pass string   `json:"auth_pass"` // at most 8 bytes
}

// VIP is one virtual_ipaddress (or _excluded) line.
type VIP struct {
	Pos    Pos          `json:"pos"`
	Prefix netip.Prefix `json:"address"` // the address with its prefix length
	// Broadcast is the broadcast address, if given (brd ADDR, or "-"/"+"
	// resolved against the prefix).
	Broadcast netip.Addr `json:"brd,omitzero"`
	Dev       string     `json:"dev,omitempty"`
	Scope     string     `json:"scope,omitempty"`
	Label     string     `json:"label,omitempty"`
	Peer      netip.Addr `json:"peer,omitzero"`
	Home      bool       `json:"home,omitempty"`
	// DAD: "-nodad" was given. keepalived adds IPv6 addresses with
	// IFA_F_NODAD (usable at once, never "dadfailed" after a split brain)
	// unless "-nodad" is given, which lets the kernel run Duplicate Address
	// Detection: the option's name says the opposite of what it does.
	DAD           bool `json:"dad,omitempty"`
	MngTmpAddr    bool `json:"mngtmpaddr,omitempty"`
	NoPrefixRoute bool `json:"noprefixroute,omitempty"`
	AutoJoin      bool `json:"autojoin,omitempty"`
	NoTrack       bool `json:"no_track,omitempty"`
	// UseVMAC is the address's use_vmac option; VMACDev the macvlan it
	// goes on (resolved: use_vmac_addr or UseVMAC), "" for none.
	UseVMAC bool   `json:"use_vmac,omitempty"`
	VMACDev string `json:"vmac_dev,omitempty"`
	// PreferredLft is in seconds; -1 is forever. IPv6 /128 defaults to 0
	// (deprecated, so never chosen as a source), anything else to forever.
	PreferredLft int `json:"preferred_lft"`
}

// Route is one virtual_routes line.
type Route struct {
	Pos      Pos          `json:"pos"`
	Type     string       `json:"type,omitempty"` // unicast (default), blackhole, unreachable, prohibit, ...
	Dst      netip.Prefix `json:"to"`
	Src      netip.Addr   `json:"src,omitzero"`
	Via      netip.Addr   `json:"via,omitzero"`
	Or       netip.Addr   `json:"or,omitzero"`
	Dev      string       `json:"dev,omitempty"`
	Table    int          `json:"table,omitempty"`
	Metric   int          `json:"metric,omitempty"`
	Scope    string       `json:"scope,omitempty"`
	Protocol string       `json:"protocol,omitempty"`
	OnLink   bool         `json:"onlink,omitempty"`
	NoTrack  bool         `json:"no_track,omitempty"`
}

// UnicastPeer is one unicast_peer entry.
type UnicastPeer struct {
	Addr   netip.Addr `json:"address"`
	MinTTL int        `json:"min_ttl,omitempty"`
	MaxTTL int        `json:"max_ttl,omitempty"`
	pos    Pos
}

// VirtualServerGroup is a virtual_server_group.
type VirtualServerGroup struct {
	Pos     Pos        `json:"pos"`
	Name    string     `json:"name"`
	Entries []VSGEntry `json:"entries"`

	written int // entries written, valid or not
}

// VSGEntry is one line of a virtual_server_group: an address or range of
// addresses (First to Last, inclusive) with a port, or a fwmark.
type VSGEntry struct {
	Pos    Pos        `json:"pos"`
	First  netip.Addr `json:"first,omitzero"`
	Last   netip.Addr `json:"last,omitzero"`
	Port   uint16     `json:"port,omitempty"`
	FWMark uint32     `json:"fwmark,omitempty"`
	Family Family     `json:"family,omitempty"`
}

// Method is an IPVS forwarding method (lvs_method / lb_kind).
type Method struct {
	Kind MethodKind `json:"kind"`
	// Tunnel options, for TUN only.
	TunType TunnelType `json:"type,omitempty"`
	TunPort uint16     `json:"port,omitempty"` // gue only
	TunCsum TunnelCsum `json:"csum,omitempty"`
}

// Persistence is a virtual server's persistence; nil when not persistent.
type Persistence struct {
	Timeout time.Duration `json:"timeout"`
	// Granularity is the netmask (IPv4, dotted) or prefix length (IPv6) as
	// written; empty for the kernel's default.
	Granularity string `json:"granularity,omitempty"`
	Engine      string `json:"engine,omitempty"`
}

// VirtualServer is a virtual_server: exactly one of Addr (with Protocol),
// FWMark or Group identifies it.
type VirtualServer struct {
	Pos      Pos            `json:"pos"`
	Addr     netip.AddrPort `json:"address,omitzero"`
	FWMark   uint32         `json:"fwmark,omitempty"`
	Group    string         `json:"group,omitempty"`
	Family   Family         `json:"family"`
	Protocol Protocol       `json:"protocol,omitempty"`

	Scheduler   string       `json:"lvs_sched"`
	SchedFlags  []string     `json:"sched_flags,omitempty"` // flag-1..3, sh-port, sh-fallback, mh-port, mh-fallback
	Method      Method       `json:"lvs_method"`
	Persistence *Persistence `json:"persistence,omitempty"`
	OPS         bool         `json:"ops,omitempty"`
	HASuspend   bool         `json:"ha_suspend,omitempty"`
	VirtualHost string       `json:"virtualhost,omitempty"`

	Alpha            bool    `json:"alpha"`
	Omega            bool    `json:"omega"`
	Quorum           uint32  `json:"quorum"`
	Hysteresis       uint32  `json:"hysteresis"`
	QuorumUp         *Script `json:"quorum_up,omitempty"`
	QuorumDown       *Script `json:"quorum_down,omitempty"`
	InhibitOnFailure bool    `json:"inhibit_on_failure"`
	SorryServer      *Sorry  `json:"sorry_server,omitempty"`

	// DelayLoop and ConnectTimeout are the defaults for the real servers'
	// checkers (each checker has its resolved values).
	DelayLoop      time.Duration `json:"delay_loop"`
	ConnectTimeout time.Duration `json:"connect_timeout"`

	RealServers []*RealServer `json:"real_servers"`
	// SMTPAlert: quorum changes are mailed (smtp_alert, else global_defs'
	// smtp_alert_checker, else smtp_alert, else no; and only when
	// global_defs' Email is enabled).
	SMTPAlert bool `json:"smtp_alert,omitempty"`
	// Announce (announce bgp, a directord extension): the address is
	// announced by BGP while the service can serve; nil when not given.
	Announce *Announce `json:"announce,omitempty"`

	timing    *timing
	weight    int
	engine    string // persistence_engine, applied only to a persistent service
	set       map[string]Pos
	smtpAlert *bool
}

// Sorry is the sorry_server, used while quorum is lost.
type Sorry struct {
	Addr    netip.AddrPort `json:"address"`
	Method  Method         `json:"lvs_method"`
	Inhibit bool           `json:"sorry_server_inhibit"`
}

// RealServer is a real_server.
type RealServer struct {
	Pos              Pos            `json:"pos"`
	Addr             netip.AddrPort `json:"address"`
	Weight           int            `json:"weight"`
	Method           Method         `json:"lvs_method"`
	InhibitOnFailure bool           `json:"inhibit_on_failure"`
	Alpha            bool           `json:"alpha"`
	// RealServerExtra is what few real servers have, nil for none: 64
	// bytes a real server, 1.3 MB of 20,000, inline. Read it through
	// the methods of the same names, which are nil-safe.
	*RealServerExtra
	Checkers []*Checker `json:"checkers,omitempty"`
	// SMTPAlert: going up and down is mailed (smtp_alert, else
	// global_defs' smtp_alert_checker, else smtp_alert, else yes, as
	// keepalived; and only when global_defs' Email is enabled).
	SMTPAlert bool `json:"smtp_alert,omitempty"`

	// As read, until resolve: the real server's timings (unsetRSTiming,
	// shared, until one is given), which of inhibit_on_failure, alpha and
	// smtp_alert were given, and smtp_alert's value (rsGiven).
	given  rsGiven
	timing *timing
}

// rsGiven records the real server's keywords whose defaults depend on
// whether they were given: two bits, not a map per real server (at
// 20,000 real servers, 1.7 MB held while a file is read).
type rsGiven uint8

const (
	givenInhibit rsGiven = 1 << iota
	givenAlpha
	givenSMTPAlert
	smtpAlertOn // smtp_alert's value, with givenSMTPAlert
)

// smtpAlertAsRead is the real server's smtp_alert as read: nil if it was
// not given (a bit, not a *bool: 8 bytes of each real server).
func (rs *RealServer) smtpAlertAsRead() *bool {
	if rs.given&givenSMTPAlert == 0 {
		return nil
	}
	v := rs.given&smtpAlertOn != 0
	return &v
}

// unsetRSTiming is every real server's timing until one of its own is
// given (rsTiming): most give none.
var unsetRSTiming = unsetTiming()

// rsTiming is rs's own timing, to be written.
func rsTiming(rs *RealServer) *timing {
	if rs.timing == unsetRSTiming {
		t := *unsetRSTiming
		rs.timing = &t
	}
	return rs.timing
}

// RealServerExtra holds a real server's rarely given settings.
type RealServerExtra struct {
	UThreshold uint32  `json:"uthreshold,omitempty"`
	LThreshold uint32  `json:"lthreshold,omitempty"`
	NotifyUp   *Script `json:"notify_up,omitempty"`
	NotifyDown *Script `json:"notify_down,omitempty"`
	// VirtualHost is the real server's virtualhost, the Host header of
	// its HTTP checks unless theirs say otherwise.
	VirtualHost string `json:"virtualhost,omitempty"`
	// Unchecked are the checkers of the file directord does not have
	// (UnsupportedCheckers), which check nothing: with no Checkers, the
	// real server is always alive.
	Unchecked []Unchecked `json:"unchecked,omitempty"`
}

// extra is rs's RealServerExtra, made when first written.
func (rs *RealServer) extra() *RealServerExtra {
	if rs.RealServerExtra == nil {
		rs.RealServerExtra = new(RealServerExtra)
	}
	return rs.RealServerExtra
}

// UThreshold is the real server's uthreshold, 0 for none.
func (rs *RealServer) UThreshold() uint32 {
	if rs.RealServerExtra == nil {
		return 0
	}
	return rs.RealServerExtra.UThreshold
}

// LThreshold is the real server's lthreshold, 0 for none.
func (rs *RealServer) LThreshold() uint32 {
	if rs.RealServerExtra == nil {
		return 0
	}
	return rs.RealServerExtra.LThreshold
}

// NotifyUp is the real server's notify_up script, nil for none.
func (rs *RealServer) NotifyUp() *Script {
	if rs.RealServerExtra == nil {
		return nil
	}
	return rs.RealServerExtra.NotifyUp
}

// NotifyDown is the real server's notify_down script, nil for none.
func (rs *RealServer) NotifyDown() *Script {
	if rs.RealServerExtra == nil {
		return nil
	}
	return rs.RealServerExtra.NotifyDown
}

// VirtualHost is the real server's virtualhost, "" for none.
func (rs *RealServer) VirtualHost() string {
	if rs.RealServerExtra == nil {
		return ""
	}
	return rs.RealServerExtra.VirtualHost
}

// Unchecked are the real server's checkers directord does not have.
func (rs *RealServer) Unchecked() []Unchecked {
	if rs.RealServerExtra == nil {
		return nil
	}
	return rs.RealServerExtra.Unchecked
}

// Unchecked is a checker directord does not have, where the file has it.
type Unchecked struct {
	Type string `json:"type"` // DNS_CHECK, SMTP_CHECK ...
	Pos  Pos    `json:"pos"`
}

// String is the checker and where: "DNS_CHECK at keepalived.conf:40".
func (u Unchecked) String() string { return u.Type + " at " + u.Pos.String() }

// AlwaysAlive tells whether rs is taken as alive whatever its health
// because its only checkers are ones directord does not have.
func (rs *RealServer) AlwaysAlive() bool { return len(rs.Checkers) == 0 && len(rs.Unchecked()) > 0 }

// Checker is one health check of a real server, with every timing resolved
// (checker, else real server, else virtual server, else keepalived's
// default for the checker's type).
type Checker struct {
	Pos Pos `json:"pos"`
	// CheckerSpec is the rest of the checker: shared by value among the
	// checkers of one load that are written and resolved alike, and never
	// changed once loaded (intern.go). A file of 20,000 real servers
	// checked alike holds one, not 20,000 of 240 bytes each.
	*CheckerSpec
}

// CheckerSpec is a checker's settings, every timing resolved. Shared:
// a change is made to a copy, shared in turn.
type CheckerSpec struct {
	Type CheckerType `json:"type"`

	ConnectIP   netip.Addr `json:"connect_ip,omitzero"`
	ConnectPort uint16     `json:"connect_port,omitempty"`
	BindTo      netip.Addr `json:"bindto,omitzero"`
	BindPort    uint16     `json:"bind_port,omitempty"`
	BindIf      string     `json:"bind_if,omitempty"`
	FWMark      uint32     `json:"fwmark,omitempty"`

	ConnectTimeout   time.Duration `json:"connect_timeout"`
	DelayLoop        time.Duration `json:"delay_loop"`
	DelayBeforeRetry time.Duration `json:"delay_before_retry"`
	Warmup           time.Duration `json:"warmup"`
	Retry            int           `json:"retry"`
	Alpha            bool          `json:"alpha"`
	LogAllFailures   bool          `json:"log_all_failures,omitempty"`
	// Rise and Fall (directord extensions) are the consecutive successes
	// and failures that change the checker's state; 0 keeps keepalived's
	// one success and retry+1 failures.
	Rise int `json:"rise,omitempty"`
	Fall int `json:"fall,omitempty"`

	HTTP *HTTPCheck `json:"http,omitempty"`
	Misc *MiscCheck `json:"misc,omitempty"`
	UDP  *UDPCheck  `json:"udp,omitempty"`
	DNS  *DNSCheck  `json:"dns,omitempty"`
	SMTP *SMTPCheck `json:"smtp,omitempty"`

	// As read, until resolve: the checker's own timings (-1 where not
	// given) and alpha (alphaSet: given, as alphaGiven). Values, not
	// pointers, so that checkers read alike share before they are
	// resolved too; zero once resolved.
	timing               timing
	alphaSet, alphaGiven bool
}

// HTTPCheck holds what HTTP_GET and SSL_GET add.
type HTTPCheck struct {
	URLs []*URL `json:"url"`
	// VirtualHost is the Host header unless a URL sets its own: the
	// checker's virtualhost, else the real server's, else the virtual
	// server's.
	VirtualHost string `json:"virtualhost,omitempty"`
	// SNIVirtualHost is the server name enable_sni sends unless a URL
	// sets its own virtualhost: the checker's virtualhost, else the
	// virtual server's. Not the real server's, as in keepalived
	// (check_ssl.c), where the Host header takes it.
	SNIVirtualHost string `json:"sni_virtualhost,omitempty"`
	HTTPProtocol   string `json:"http_protocol"` // 1.0, 1.0C or 1.1
	EnableSNI      bool   `json:"enable_sni,omitempty"`
	FastRecovery   bool   `json:"fast_recovery,omitempty"`
	// SNIName (a directord extension) is the server name sent with
	// enable_sni, instead of the virtual host.
	SNIName string `json:"sni_name,omitempty"`
	// VerifyCertificate (a directord extension) checks the real server's
	// certificate against the global SSL block's ca (else the system's
	// roots) and the server name; keepalived never verifies.
	VerifyCertificate bool `json:"verify_certificate,omitempty"`
	// ReuseConnection (a directord extension) keeps a probe's connection
	// for the next probes, HTTP keep-alive, for at most this long after
	// it was opened; 0, keepalived's way, opens one per URL and probe.
	ReuseConnection time.Duration `json:"reuse_connection,omitempty"`
}

// URL is one url block of an HTTP check.
//
// A URL, and an HTTPCheck, may be shared by every checker that has one
// of the same value, and are never changed once loaded: a file of
// 20,000 real servers checked alike holds one (intern.go). A url has
// no position of its own in the model for that reason; its checker's
// is where it was given.
type URL struct {
	Path string `json:"path"`
	// Digest is the MD5 of the body, lower-case hex, as keepalived's genhash
	// prints it; empty for none.
	Digest      string        `json:"digest,omitempty"`
	StatusCodes []StatusRange `json:"status_code"`
	VirtualHost string        `json:"virtualhost,omitempty"`

	// Regex is the pattern the answer must match (or, with
	// RegexNoMatch, must not), as written after keepalived's reading of
	// its escapes; Regexp is it compiled with RegexOptions, in Go's
	// syntax (RE2).
	Regex        string         `json:"regex,omitempty"`
	Regexp       *regexp.Regexp `json:"-"`
	RegexNoMatch bool           `json:"regex_no_match,omitempty"`
	RegexOptions []string       `json:"regex_options,omitempty"`
	// RegexFirstLine (regex_options firstline): the match starts on the
	// first line.
	RegexFirstLine bool `json:"-"`
	// RegexMinOffset and RegexMaxOffset bound the offset, in the answer,
	// where a match may start (nil: no bound above).
	RegexMinOffset int  `json:"regex_min_offset,omitempty"`
	RegexMaxOffset *int `json:"regex_max_offset,omitempty"`

	// rx is where the regex and its last setting were written, while the
	// url block is decoded; nil once its regex is compiled (or when it has
	// no regex keyword), so a resolved url does not carry two positions.
	rx *urlRegexPos
}

type urlRegexPos struct{ at, param Pos }

// regexPos is u's rx, made on first use.
func (u *URL) regexPos() *urlRegexPos {
	if u.rx == nil {
		u.rx = &urlRegexPos{}
	}
	return u.rx
}

// StatusRange is an inclusive range of HTTP status codes.
type StatusRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Contains reports whether code falls in the range.
func (r StatusRange) Contains(code int) bool { return code >= r.Min && code <= r.Max }

// MiscCheck holds what MISC_CHECK adds.
type MiscCheck struct {
	Script *Script `json:"misc_path"`
	// Timeout defaults to the virtual server's delay_loop.
	Timeout time.Duration `json:"misc_timeout"`
	// Dynamic sets the weight from the exit code (2..255 → code-2).
	Dynamic bool `json:"misc_dynamic"`
}

// UDPCheck holds what UDP_CHECK adds.
type UDPCheck struct {
	// Payload is the datagram sent; nil sends keepalived's 32 bytes
	// ("keepalived check - keepalived ch").
	Payload HexBytes `json:"payload,omitempty"`
	// RequireReply: no reply within connect_timeout is a failure (else a
	// success: only an ICMP destination unreachable fails).
	RequireReply bool `json:"require_reply,omitempty"`
	// Reply is the data the reply must start with (require_reply's hex
	// string); ReplyMask has a bit set where Reply's bit is a wildcard
	// (an x in the hex string). Only with Reply are the reply's lengths
	// checked, as in keepalived.
	Reply     HexBytes `json:"reply,omitempty"`
	ReplyMask HexBytes `json:"reply_mask,omitempty"`
	MinReply  int      `json:"min_reply_length"`
	MaxReply  int      `json:"max_reply_length"` // default 255
}

// HexBytes are bytes shown in hexadecimal (in --dump-config).
type HexBytes []byte

// MarshalText is b in lower-case hexadecimal.
func (b HexBytes) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(b)), nil }

// DNSCheck holds what DNS_CHECK adds.
type DNSCheck struct {
	Type string `json:"type"` // A, NS, CNAME, SOA (default), MX, TXT, AAAA, RRSIG or DNSKEY
	Name string `json:"name"` // default "" (the root)
}

// SMTPCheck holds what SMTP_CHECK adds.
type SMTPCheck struct {
	HELOName string `json:"helo_name"` // default smtpchecker.keepalived.org
}

// timing holds the inherited check timings as written at one level; a
// negative value (or retry < 0) means not given there. The model points
// to it while decoding only: resolve copies the timings into each
// checker's fields and drops it (nil), so a resolved model does not carry
// 40 bytes per level that nothing reads again.
type timing struct {
	delayLoop, connectTimeout, delayBeforeRetry, warmup time.Duration
	retry                                               int
}

func unsetTiming() *timing {
	return &timing{delayLoop: -1, connectTimeout: -1, delayBeforeRetry: -1, warmup: -1, retry: -1}
}
