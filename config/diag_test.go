package config

import (
	"strings"
	"testing"
)

// vi wraps instance lines in a minimal valid vrrp_instance.
func vi(lines string) string {
	return "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n" + lines + "\n}\n"
}

// vsrv wraps lines in a minimal valid virtual_server.
func vsrv(lines string) string {
	return "virtual_server 10.0.0.1 80 {\n protocol TCP\n" + lines + "\n}\n"
}

// TestDiagnostics holds one case per diagnostic: a configuration and the
// exact messages it must produce, with their file:line, nothing more.
func TestDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want string
	}{
		// One fault, one message.
		{"unknown keyword with did-you-mean", vi(" priorty 100"),
			"/k.conf:4: warning: priorty: unknown keyword in vrrp_instance, ignored as keepalived does; did you mean \"priority\"?"},
		{"unknown block skipped whole", vi(" virtual_ipadress {\n  10.0.0.1\n  10.0.0.2 dev eth0\n  nested {\n   x\n  }\n }\n priority 50"),
			"/k.conf:4: error: virtual_ipadress: unknown keyword in vrrp_instance; did you mean \"virtual_ipaddress\"? (keepalived would read its block's lines as keywords of vrrp_instance, and its } would end vrrp_instance early)"},
		{"keyword in the wrong block", vsrv(" virtual_router_id 5"),
			"/k.conf:3: warning: virtual_router_id: unknown keyword in virtual_server, ignored as keepalived does; it belongs in vrrp_instance"},
		{"unknown top-level block holding a top-level keyword", "local_address_group g {\n 10.0.0.1\n use_pid_dir\n}\n",
			"/k.conf:1: error: local_address_group: unknown keyword in the top level (keepalived would read its block's lines as top-level keywords, and run use_pid_dir at /k.conf:3)"},
		{"unknown top-level block of addresses", "local_address_group laddr_g1 {\n 192.168.1.165\n}\n",
			"/k.conf:1: warning: local_address_group: unknown keyword in the top level, ignored as keepalived does"},
		{"same VIP on two devices", vi(" virtual_ipaddress_excluded {\n  10.0.0.1/24 dev eth1\n }") +
			"vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n virtual_ipaddress_excluded {\n  10.0.0.1/24 dev eth2\n }\n}\n", ""},
		{"sync group of absent instances removed", "vrrp_sync_group G {\n group {\n  VI_8\n  VI_9\n }\n}\n",
			"/k.conf:1: warning: vrrp_sync_group: G: none of its instances exists: the group is removed, as keepalived does\n" +
				"/k.conf:3: warning: vrrp_sync_group: G: no vrrp_instance VI_8 is defined, ignored as keepalived does\n" +
				"/k.conf:4: warning: vrrp_sync_group: G: no vrrp_instance VI_9 is defined, ignored as keepalived does"},
		{"garp interval 0 ignored", "global_defs {\n vrrp_garp_interval 0\n}\n",
			"/k.conf:2: warning: vrrp_garp_interval: \"0\" is not a time in seconds from 0.000001 to 4294: ignored, as keepalived does"},
		{"persistence_timeout 0 ignored", vsrv(" persistence_timeout 0"),
			"/k.conf:3: warning: persistence_timeout: \"0\" is not an integer from 1 to 2678400: ignored, as keepalived does"},
		{"AH clears state MASTER", vi(" state MASTER\n priority 50\n authentication {\n  auth_type AH\n  auth_pass x\n }"),
			"/k.conf:4: warning: state: VI_1: state MASTER does not go with AH authentication: BACKUP, as keepalived does"},
		{"AH keeps the address owner MASTER", vi(" state MASTER\n priority 255\n authentication {\n  auth_type AH\n  auth_pass x\n }"), ""},
		{"fwmark DR real server port cleared", "virtual_server fwmark 7 {\n lvs_method DR\n real_server 10.0.0.2 53 {\n }\n}\n",
			"/k.conf:3: warning: real_server: DR of a fwmark virtual server has no port: 53 cleared, as keepalived does (its checkers keep it)"},
		{"fwmark NAT real server keeps its port", "virtual_server fwmark 7 {\n lvs_method NAT\n real_server 10.0.0.2 53 {\n }\n}\n", ""},
		{"unknown top-level keyword", "vrrp_instanse VI_1 {\n priority 1\n}\n",
			"/k.conf:1: warning: vrrp_instanse: unknown keyword in the top level, ignored as keepalived does; did you mean \"vrrp_instance\"?"},
		{"case typo", "Global_defs {\n}\n",
			"/k.conf:1: warning: Global_defs: unknown keyword in the top level, ignored as keepalived does; did you mean \"global_defs\"?"},
		{"nonsense keyword", vi(" xyzzy"),
			"/k.conf:4: warning: xyzzy: unknown keyword in vrrp_instance, ignored as keepalived does"},
		{"unsupported feature, not a typo", vi(" use_ipvlan"),
			"/k.conf:4: warning: use_ipvlan: not supported by directord"},
		{"persistence_engine alone is not persistence", vsrv(" persistence_engine sip"),
			"/k.conf:3: warning: persistence_engine: has no effect without persistence_timeout (or persistence_granularity): the service is not persistent, as in keepalived"},
		{"ha_suspend on a fwmark", "virtual_server fwmark 5 {\n lb_algo rr\n ha_suspend\n}\n",
			"/k.conf:3: warning: ha_suspend: a fwmark virtual server has no address to wait for: ignored, as keepalived clears it"},
		{"unsupported checker skipped whole", vsrv(" real_server 10.0.0.2 80 {\n  PING_CHECK {\n   retry 2\n   host {\n    connect_ip 1.2.3.4\n   }\n  }\n }"),
			"/k.conf:4: warning: PING_CHECK: not supported by directord (the real server is not checked by it: always alive without another checker)"},
		{"unsupported global", "global_defs {\n enable_traps\n}\n",
			"/k.conf:2: warning: enable_traps: not supported by directord (directord has no SNMP or DBus interface; use directorctl and metrics)"},
		{"smtp_server bad port", "global_defs {\n smtp_server 192.0.2.1 smtp\n}\n",
			"/k.conf:2: error: smtp_server: invalid smtp server 192.0.2.1 smtp: the port is not a number from 1 to 65535"},
		{"smtp_server bad host", "global_defs {\n smtp_server mail/relay\n}\n",
			"/k.conf:2: error: smtp_server: invalid smtp server mail/relay 25: neither an IP address nor a host name"},
		{"smtp_connect_timeout 0", "global_defs {\n smtp_connect_timeout 0\n}\n",
			"/k.conf:2: warning: smtp_connect_timeout: smtp_connect_timeout must be greater than 0, setting to 1"},
		{"smtp_alert bad value", "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n smtp_alert maybe\n virtual_ipaddress {\n  10.0.0.1\n }\n}\n",
			"/k.conf:4: error: smtp_alert: \"maybe\" is not one of on|off|true|false|yes|no"},

		// Structure.
		{"missing close brace", "global_defs {\n router_id x\n",
			"/k.conf:1: error: global_defs: block is never closed: missing }"},
		{"missing close brace before the next block", "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n  10.0.0.1\n}\n" +
			"vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n}\nvirtual_server 10.0.0.1 80 {\n protocol TCP\n}\n",
			"/k.conf:1: error: vrrp_instance: block is never closed: missing } before vrrp_instance at /k.conf:7"},
		{"missing close brace, nested", "global_defs {\n router_id a\n}\nvrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n  10.0.0.1\n",
			"/k.conf:7: error: virtual_ipaddress: block is never closed: missing }"},
		{"extra close brace", "global_defs {\n}\n}\n",
			"/k.conf:3: error: unexpected } with no block open"},
		{"brace without keyword", "{\n a\n}\nglobal_defs {\n}\n",
			"/k.conf:1: error: unexpected { with no keyword before it"},
		{"brace on next line", "global_defs\n{\n router_id x\n}\n", ""},
		{"block needed", "global_defs\nvrrp_script s {\n script /bin/true\n}\n",
			"/k.conf:1: error: global_defs: needs a { block }"},
		{"block not wanted", vi(" priority 5 {\n }"),
			"/k.conf:4: error: priority: takes no block"},
		{"missing value", vi(" priority"),
			"/k.conf:4: error: priority: needs a value"},
		{"extra value", vi(" virtual_router_id 2 priority 100"),
			"/k.conf:4: warning: virtual_router_id: unexpected \"priority 100\" ignored"},

		// VRRP values and semantics.
		{"VRID range", "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 256\n}\n",
			"/k.conf:3: error: virtual_router_id: \"256\" is not an integer from 1 to 255"},
		{"VRID missing", "vrrp_instance VI_1 {\n interface eth0\n}\n",
			"/k.conf:1: error: vrrp_instance: VI_1 has no virtual_router_id"},
		{"priority range", vi(" priority 0"),
			"/k.conf:4: error: priority: \"0\" is not an integer from 1 to 255"},
		{"priority 255 only for the owner", vi(" state BACKUP\n priority 255"),
			"/k.conf:1: warning: priority: VI_1: priority 255 means this router owns the addresses; it should be state MASTER"},
		{"state MASTER without priority", vi(" state MASTER"),
			"/k.conf:1: warning: vrrp_instance: VI_1: state MASTER without a priority: priority 255 (address owner), as keepalived does"},
		{"bad state", vi(" state master"),
			"/k.conf:4: warning: state: \"master\" is not MASTER or BACKUP: BACKUP, as keepalived does"},
		{"advert_int v2 whole seconds", vi(" advert_int 1.5"),
			"/k.conf:4: warning: advert_int: VRRPv2 counts whole seconds: 1.5 read as 2"},
		{"advert_int v3 limit", vi(" version 3\n advert_int 41\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:5: error: advert_int: VRRPv3 allows at most 40.95 seconds, not 41"},
		{"advert_int v3 centiseconds", vi(" version 3\n advert_int 0.125\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:5: warning: advert_int: VRRPv3 counts centiseconds: 0.125 read as 0.13"},
		{"IPv6 forces v3", vi(" version 2\n virtual_ipaddress {\n  2001:db8::1\n }"),
			"/k.conf:4: warning: version: VI_1: IPv6 needs VRRPv3; version 3 is used"},
		{"IPv6 takes v3 silently", vi(" virtual_ipaddress {\n  2001:db8::1\n }"), ""},
		{"mixed families", vi(" virtual_ipaddress {\n  10.0.0.1\n  2001:db8::1\n }"),
			"/k.conf:6: warning: 2001:db8::1: virtual_ipaddress: not of the family of VI_1's first address, ignored as keepalived does (put other families in virtual_ipaddress_excluded)"},
		{"duplicate VRID on an interface", vi("") + "vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 1\n}\n",
			"/k.conf:6: error: virtual_router_id: VI_2 uses VRID 1 on eth0, as VI_1 does at /k.conf:1"},
		{"same VRID, other family or interface", vi("") +
			"vrrp_instance VI_2 {\n interface eth1\n virtual_router_id 1\n}\n" +
			"vrrp_instance VI_3 {\n interface eth0\n virtual_router_id 1\n version 3\n virtual_ipaddress {\n  2001:db8::1\n }\n}\n", ""},
		{"duplicate VIP across instances", vi(" virtual_ipaddress {\n  10.0.0.1\n }") +
			"vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n virtual_ipaddress {\n  10.0.0.1/24\n }\n}\n",
			"/k.conf:12: warning: 10.0.0.1: virtual address 10.0.0.1 on eth0 is also moved by VI_1 at /k.conf:5: whichever leaves master first removes it from the other, as in keepalived"},
		{"duplicate VIP in one instance", vi(" virtual_ipaddress {\n  10.0.0.1\n  10.0.0.1 label eth0:1\n }"),
			"/k.conf:6: warning: 10.0.0.1: virtual address 10.0.0.1 is already listed at /k.conf:5: this line is ignored"},
		{"too many VIPs for an advert", vi(" virtual_ipaddress {\n  ~SEQ(i, 0, 255) 10.0.0.$i\n }"),
			"/k.conf:5: warning: virtual_ipaddress: VI_1: an advert holds at most 255 addresses: the 1 from here on are handled as virtual_ipaddress_excluded, as keepalived does"},
		{"bad VIP", vi(" virtual_ipaddress {\n  10.0.0.300\n }"),
			"/k.conf:5: error: 10.0.0.300: \"10.0.0.300\" is not an IP address with an optional /prefix"},
		{"bad VIP option", vi(" virtual_ipaddress {\n  10.0.0.1 lable x\n }"),
			"/k.conf:5: error: 10.0.0.1: unknown address option \"lable\"; did you mean \"label\"?"},
		{"bad scope", vi(" virtual_ipaddress {\n  10.0.0.1 scope galaxy\n }"),
			"/k.conf:5: error: 10.0.0.1: scope \"galaxy\" is not one of global, site, link, host, nowhere or a number"},
		{"brd on a /32", vi(" virtual_ipaddress {\n  10.0.0.1 brd +\n }"),
			"/k.conf:5: error: 10.0.0.1: brd \"+\" is not an IPv4 address, - or + (which need a prefix of /30 or shorter)"},
		{"route without destination", vi(" virtual_routes {\n  via 10.0.0.1 dev eth0\n }"),
			"/k.conf:5: error: via: route has no destination"},
		{"default route family from its gateway", vi(" virtual_routes {\n  default via 2001:db8::1 dev eth0\n  default src 10.0.0.1 dev eth0\n }"), ""},
		// keepalived's alloc_route: "Warning - cannot track route ...
		// with no interface specified, not tracking".
		{"route without dev", vi(" virtual_routes {\n  10.1.0.0/16 via 10.0.0.1\n  10.2.0.0/16 via 10.0.0.1 no_track\n }"),
			"/k.conf:5: warning: 10.1.0.0/16: route 10.1.0.0/16 has no dev: not tracked, as keepalived does"},
		// keepalived resets a tracked route's protocol to its own.
		{"tracked route's protocol", vi(" virtual_routes {\n  10.1.0.0/16 dev eth0 proto static\n  10.2.0.0/16 dev eth0 proto static no_track\n }"),
			"/k.conf:5: warning: 10.1.0.0/16: route 10.1.0.0/16: protocol static is set to keepalived, as keepalived does for a tracked route (no_track keeps it)"},
		{"route src of another family", vi(" virtual_routes {\n  10.1.0.0/16 src 2001:db8::1\n }"),
			"/k.conf:5: error: 10.1.0.0/16: route src 2001:db8::1 is not of the family of its destination 10.1.0.0/16: netlink refuses it"},
		{"IPv6 route via IPv4", vi(" virtual_routes {\n  2001:db8::/64 via 10.0.0.1\n }"),
			"/k.conf:5: error: 2001:db8::/64: an IPv6 route cannot go via the IPv4 address 10.0.0.1: netlink refuses it"},
		{"route unsupported option", vi(" virtual_routes {\n  10.1.0.0/16 via 10.0.0.1 dev eth0 mtu 1400\n }"),
			"/k.conf:5: warning: 10.1.0.0/16: not supported by directord (route option mtu is not programmed)"},
		{"no interface", "vrrp_instance VI_1 {\n virtual_router_id 1\n}\n",
			"/k.conf:1: error: vrrp_instance: VI_1 has no interface (only a unicast instance may omit it)"},
		{"unicast without interface", "vrrp_instance VI_1 {\n virtual_router_id 1\n unicast_peer {\n  10.0.0.2\n }\n}\n", ""},
		{"unicast family", vi(" unicast_src_ip 2001:db8::1\n unicast_peer {\n  10.0.0.2\n }\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:4: error: unicast_src_ip: 2001:db8::1 is not an inet address like VI_1's virtual addresses"},
		{"bad unicast peer option", vi(" unicast_peer {\n  10.0.0.2 min_tll 3\n }"),
			"/k.conf:5: error: 10.0.0.2: unknown option \"min_tll\"; did you mean \"min_ttl\"?"},
		{"unicast_ttl without peers", vi(" unicast_ttl 10\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:4: warning: unicast_ttl: has no effect without unicast_peer: ignored, as keepalived does"},
		{"unicast_ttl 0", vi(" unicast_ttl 0\n unicast_peer {\n  10.0.0.2\n }\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:4: error: unicast_ttl: 0 cannot be sent: the kernel refuses TTL 0 on directord's socket (keepalived writes it in its own IPv4 header)"},
		{"unicast_ttl 0 with AH", vi(" unicast_ttl 0\n authentication {\n  auth_type AH\n  auth_pass x\n }\n unicast_peer {\n  10.0.0.2\n }\n virtual_ipaddress {\n  10.0.0.1\n }"), ""},
		{"auth_pass too long", vi(" authentication {\n  auth_type PASS\n  auth_pass 123456789\n }"),
			"/k.conf:6: warning: auth_pass: only the first 8 characters are used, as keepalived does"},
		{"auth in v3", vi(" version 3\n authentication {\n  auth_type PASS\n  auth_pass x\n }\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:5: warning: authentication: VRRPv3 has no authentication: ignored, as keepalived does"},
		{"auth without type", vi(" authentication {\n  auth_pass x\n }"),
			"/k.conf:4: error: authentication: has no auth_type"},
		{"unknown track_script", vi(" track_script {\n  chk_hhtp\n }") + "vrrp_script chk_http {\n script /bin/true\n}\n",
			"/k.conf:5: error: chk_hhtp: track_script: no vrrp_script chk_hhtp is defined; did you mean \"chk_http\"?"},
		{"track weight range", vi(" track_interface {\n  eth1 weight 300\n }"),
			"/k.conf:5: error: eth1: \"300\" is not an integer from -254 to 254"},
		{"track weight 254 clamps", vi(" track_interface {\n  eth1 weight -254\n }"),
			"/k.conf:5: warning: eth1: weight -254 read as -253, as keepalived does"},
		{"track syntax", vi(" track_script {\n  s wieght 3\n }") + "vrrp_script s {\n script /bin/true\n}\n",
			"/k.conf:5: error: s: expected \"s [weight W [reverse|noreverse]]\", got \"wieght 3\""},
		{"script weight range", "vrrp_script s {\n script /bin/true\n weight 254\n}\n",
			"/k.conf:3: error: weight: \"254\" is not an integer from -253 to 253"},
		{"script without script", "vrrp_script s {\n interval 2\n}\n",
			"/k.conf:1: error: vrrp_script: s has no script"},
		{"duplicate script", "vrrp_script s {\n script /bin/true\n}\nvrrp_script s {\n script /bin/false\n}\n",
			"/k.conf:4: error: vrrp_script: s is already defined at /k.conf:1"},
		{"duplicate instance", vi("") + "vrrp_instance VI_1 {\n interface eth1\n virtual_router_id 2\n}\n",
			"/k.conf:6: error: vrrp_instance: VI_1 is already defined at /k.conf:1"},
		{"unknown sync group member", vi("") + "vrrp_sync_group G {\n group {\n  VI_1\n  VI_9\n }\n}\n",
			"/k.conf:6: warning: vrrp_sync_group: G has only one instance\n" +
				"/k.conf:9: warning: vrrp_sync_group: G: no vrrp_instance VI_9 is defined, ignored as keepalived does; did you mean \"VI_1\"?"},
		{"member of two groups", vi("") + "vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n}\n" +
			"vrrp_sync_group G {\n group {\n  VI_1\n  VI_2\n }\n}\nvrrp_sync_group H {\n group {\n  VI_1\n  VI_2\n }\n}\n",
			"/k.conf:18: error: vrrp_sync_group: H: instance VI_1 is already in sync group G\n" +
				"/k.conf:19: error: vrrp_sync_group: H: instance VI_2 is already in sync group G"},
		{"sync group zeroes weights", vi(" track_interface {\n  eth1 weight 10\n }") +
			"vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n}\nvrrp_sync_group G {\n group {\n  VI_1\n  VI_2\n }\n}\n",
			"/k.conf:1: warning: vrrp_instance: VI_1 is in sync group G: its tracking weights are set to 0, as keepalived does (set sync_group_tracking_weight to keep them)"},
		{"nopreempt with MASTER", vi(" state MASTER\n priority 100\n nopreempt"),
			"/k.conf:6: warning: nopreempt: needs state BACKUP: cleared, as keepalived does"},
		{"nopreempt clears preempt_delay", vi(" nopreempt\n preempt_delay 3"),
			"/k.conf:5: warning: preempt_delay: has no use with nopreempt: cleared, as keepalived does"},
		{"priority 255 without state is MASTER", vi(" priority 255"), ""},
		{"strict mode", "global_defs {\n vrrp_strict\n}\n" + vi(" state MASTER\n priority 150\n preempt_delay 2\n authentication {\n  auth_type PASS\n  auth_pass x\n }\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:7: warning: state: VI_1: strict mode allows state MASTER only for the address owner (priority 255): BACKUP, as keepalived does\n" +
				"/k.conf:9: warning: preempt_delay: strict mode has no preempt_delay: cleared, as keepalived does\n" +
				"/k.conf:10: warning: authentication: strict mode has no authentication: ignored, as keepalived does"},
		{"strict mode: the owner is MASTER", "global_defs {\n vrrp_strict\n}\n" + vi(" state BACKUP\n priority 255\n virtual_ipaddress {\n  10.0.0.1\n }"),
			"/k.conf:7: warning: state: VI_1: strict mode starts the address owner (priority 255) in state MASTER, as keepalived does"},
		{"unicast keyword without peers", vi(" unicast_src_ip 10.0.0.2"),
			"/k.conf:4: warning: unicast_src_ip: VI_1: no unicast_peer: the instance uses multicast, as keepalived does"},
		{"empty unicast_peer block", vi(" unicast_peer {\n }"),
			"/k.conf:4: warning: unicast_peer: VI_1: no unicast_peer: the instance uses multicast, as keepalived does"},
		{"strict mode without VIP", "global_defs {\n vrrp_strict\n}\n" + vi(""),
			"/k.conf:4: error: vrrp_instance: VI_1: strict mode needs at least one virtual_ipaddress"},
		{"v3 without VIP", vi(" version 3"),
			"/k.conf:1: error: vrrp_instance: VI_1: VRRPv3 needs at least one virtual_ipaddress (keepalived refuses it too)"},
		{"garp repeat 0", vi(" garp_master_repeat 0"),
			"/k.conf:4: warning: garp_master_repeat: must be at least 1: 1 used, as keepalived does"},
		{"script interval 0", "vrrp_script s {\n script /bin/true\n interval 0\n}\n",
			"/k.conf:3: warning: interval: 0 read as 1 second, as keepalived does"},
		{"script interval fraction", "vrrp_script s {\n script /bin/true\n interval 0.5\n}\n",
			"/k.conf:3: error: interval: \"0.5\" is not an integer from 0 to 4294"},
		{"bad auth_type, one message", vi(" authentication {\n  auth_type pass\n  auth_pass x\n }"),
			"/k.conf:5: error: auth_type: \"pass\" is not PASS or AH"},
		{"script without value, one message", vi(" track_script {\n  s\n }") + "vrrp_script s {\n script\n}\n",
			"/k.conf:9: error: script: needs a value"},
		{"url path without value, one message", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path\n   }\n  }\n }"),
			"/k.conf:6: error: path: needs a value"},
		{"random range", "global_defs {\n router_id ${_RANDOM 0 9223372036854775807}\n}\n",
			"/k.conf:2: error: parameter ${_RANDOM 0 9223372036854775807} is not defined"},
		{"bad bool", vi(" strict_mode maybe"),
			"/k.conf:4: error: strict_mode: \"maybe\" is not one of on|off|true|false|yes|no"},
		{"bad time", vi(" preempt_delay soon"),
			"/k.conf:4: error: preempt_delay: \"soon\" is not a time in seconds from 0 to 1000"},
		{"sync daemon unknown instance", "global_defs {\n lvs_sync_daemon eth0 VI_9\n}\n" + vi(""),
			"/k.conf:2: error: lvs_sync_daemon: no vrrp_instance VI_9 is defined; did you mean \"VI_1\"?"},
		{"sync daemon bad option", "global_defs {\n lvs_sync_daemon eth0 VI_1 maxlne 1400\n}\n" + vi(""),
			"/k.conf:2: error: lvs_sync_daemon: unknown option \"maxlne\"; did you mean \"maxlen\"?"},
		{"multicast group", "global_defs {\n vrrp_mcast_group4 10.0.0.1\n}\n",
			"/k.conf:2: error: vrrp_mcast_group4: 10.0.0.1 is not an IPv4 multicast address"},

		// LVS values and semantics.
		{"protocol unset", "virtual_server 10.0.0.1 80 {\n}\n",
			"/k.conf:1: warning: virtual_server: no protocol set: UDP, as keepalived defaults (write protocol TCP for a TCP service)"},
		{"bad scheduler", vsrv(" lvs_sched rrr"),
			"/k.conf:3: warning: lvs_sched: unknown scheduler \"rrr\", ignored as keepalived does (want one of rr wrr lc wlc lblc sh mh dh fo ovf lblcr sed nq twos)"},
		{"bad method", vsrv(" lvs_method dr"),
			"/k.conf:3: warning: lvs_method: \"dr\" is not NAT, DR or TUN, ignored as keepalived does; did you mean \"DR\"?"},
		{"gue without port", vsrv(" lvs_method TUN type gue"),
			"/k.conf:3: error: lvs_method: a gue tunnel needs a port"},
		{"bad protocol", vsrv(" protocol ICMP"),
			"/k.conf:3: error: protocol: \"ICMP\" is not TCP, UDP or SCTP"},
		{"sh flag without sh", vsrv(" lvs_sched rr\n sh-port"),
			"/k.conf:4: warning: sh-port: applies only to the sh scheduler, not rr: ignored"},
		{"no port needs persistence", "virtual_server 10.0.0.1 {\n protocol TCP\n}\n",
			"/k.conf:1: warning: virtual_server: a virtual server without a port must be persistent: persistence_timeout 360, as keepalived sets"},
		{"hysteresis not below quorum", vsrv(" quorum 2\n hysteresis 2"),
			"/k.conf:1: warning: hysteresis: 2 is not less than quorum 2: 1 used, as keepalived does"},
		{"quorum unreachable", vsrv(" quorum 5\n real_server 10.0.0.2 80 {\n  weight 2\n }"),
			"/k.conf:1: warning: quorum: 5 is more than the real servers' total weight 2: 2 used, as keepalived does"},
		{"duplicate real server", vsrv(" real_server 10.0.0.2 80 {\n }\n real_server 10.0.0.2 80 {\n }"),
			"/k.conf:5: error: real_server: 10.0.0.2:80 is already a real server of this virtual server at /k.conf:3"},
		{"duplicate virtual server", vsrv("") + vsrv(""),
			"/k.conf:5: error: virtual_server: TCP 10.0.0.1:80 is already defined at /k.conf:1"},
		{"same address, other protocol", vsrv("") + "virtual_server 10.0.0.1 80 {\n protocol UDP\n}\n", ""},
		{"a group's range overlaps a virtual server", "virtual_server_group G {\n 10.0.0.0-3 80\n}\nvirtual_server group G {\n protocol TCP\n}\n" + vsrv(""),
			"/k.conf:7: error: virtual_server: TCP 10.0.0.1:80 is also a service of the virtual_server at /k.conf:4"},
		{"two groups share a fwmark", "virtual_server_group G {\n fwmark 7\n}\nvirtual_server_group H {\n fwmark 7\n}\n" +
			"virtual_server group G {\n protocol TCP\n}\nvirtual_server group H {\n protocol TCP\n}\n",
			"/k.conf:10: error: virtual_server: fwmark 7 (inet) is also a service of the virtual_server at /k.conf:7"},
		{"lthreshold without uthreshold", vsrv(" real_server 10.0.0.2 80 {\n  lthreshold 10\n }"),
			"/k.conf:3: error: lthreshold: 10 needs a uthreshold at least as high: the kernel refuses it"},
		{"granularity not contiguous", vsrv(" persistence_timeout 60\n persistence_granularity 255.0.255.0"),
			"/k.conf:4: error: persistence_granularity: \"255.0.255.0\" is not an IPv4 netmask or an IPv6 prefix length"},
		{"granularity 0.0.0.0", vsrv(" persistence_timeout 60\n persistence_granularity 0.0.0.0"),
			"/k.conf:4: error: persistence_granularity: \"0.0.0.0\" is not an IPv4 netmask or an IPv6 prefix length"},
		{"thresholds in order", vsrv(" real_server 10.0.0.2 80 {\n  lthreshold 10\n  uthreshold 10\n }"), ""},
		{"weight range", vsrv(" real_server 10.0.0.2 80 {\n  weight -1\n }"),
			"/k.conf:4: error: weight: \"-1\" is not an integer from 0 to 2147483647"},
		{"real server family", vsrv(" real_server 2001:db8::2 80 {\n }"),
			"/k.conf:3: error: real_server: 2001:db8::2 is not an inet address; only tunnelled real servers may differ in family from the virtual server"},
		{"DR port change", vsrv(" lvs_method DR\n real_server 10.0.0.2 8080 {\n }"),
			"/k.conf:4: warning: real_server: DR cannot change the port: port 80 used, not 8080, as keepalived does"},
		{"retry 0 at virtual server", vsrv(" retry 0"),
			"/k.conf:3: error: retry: \"0\" is not an integer from 1 to 2147483647"},
		{"unknown group", "virtual_server group G {\n protocol TCP\n}\nvirtual_server_group GG {\n 10.0.0.1 80\n}\n",
			"/k.conf:1: error: virtual_server: no virtual_server_group G is defined; did you mean \"GG\"?"},
		{"bad group range", "virtual_server_group G {\n 10.0.0.9-5 80\n}\n",
			"/k.conf:2: error: 10.0.0.9-5: \"10.0.0.9-5\" is not an address or a range (A-N, A-B or A/LEN)"},
		{"HTTP check without url", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   connect_timeout 3\n  }\n }"),
			"/k.conf:4: error: HTTP_GET: has no url: it would check nothing"},
		{"url without path", vsrv(" real_server 10.0.0.2 80 {\n  SSL_GET {\n   url {\n    status_code 200\n   }\n  }\n }"),
			"/k.conf:5: error: url: has no path"},
		{"bad status code", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    status_code 200-100\n   }\n  }\n }"),
			"/k.conf:7: error: status_code: \"200-100\" is not a status code or range from 100 to 599"},
		{"bad digest", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    digest abc\n   }\n  }\n }"),
			"/k.conf:7: error: digest: \"abc\" is not an MD5 digest (32 hexadecimal digits)"},
		{"regex RE2 cannot compile", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    regex \"(a)\\\\1\"\n   }\n  }\n }"),
			"/k.conf:7: error: regex: \"(a)\\\\1\" is not a regular expression directord can match (Go's syntax, RE2: no backreferences, lookahead or lookbehind): error parsing regexp: invalid escape sequence: `\\1`"},
		{"regex lookahead", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    regex \"ok(?=!)\"\n   }\n  }\n }"),
			"/k.conf:7: error: regex: \"ok(?=!)\" is not a regular expression directord can match (Go's syntax, RE2: no backreferences, lookahead or lookbehind): error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{"regex unquoted backslash", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    regex \\d+\n   }\n  }\n }"),
			"/k.conf:7: warning: regex: backslashes outside quotes are escapes, as keepalived reads them: the pattern is \"d+\"; write it in double quotes with \\\\ for a backslash of the pattern"},
		{"regex option extended", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    regex ok\n    regex_options caseless extended\n   }\n  }\n }"),
			"/k.conf:8: error: regex_options: extended is not supported by directord: Go's regular expressions have no extended syntax (blanks and # comments): remove them from the pattern"},
		{"regex option unknown", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    regex ok\n    regex_options shiny\n   }\n  }\n }"),
			"/k.conf:8: warning: regex_options: \"shiny\" is not an option of keepalived's: ignored, as keepalived ignores it"},
		{"regex settings without regex", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    regex_no_match\n   }\n  }\n }"),
			"/k.conf:7: warning: regex: regex settings without a regex: ignored, as keepalived does"},
		{"regex offsets crossed", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n    regex ok\n    regex_min_offset 10\n    regex_max_offset 5\n   }\n  }\n }"),
			"/k.conf:9: warning: regex_min_offset: regex_min_offset 10 is beyond regex_max_offset 5: both ignored, as keepalived does"},
		{"misc without path", vsrv(" real_server 10.0.0.2 80 {\n  MISC_CHECK {\n   misc_timeout 3\n  }\n }"),
			"/k.conf:4: error: MISC_CHECK: has no misc_path"},
		{"connection option in MISC_CHECK", vsrv(" real_server 10.0.0.2 80 {\n  MISC_CHECK {\n   misc_path /bin/true\n   connect_port 80\n  }\n }"),
			"/k.conf:6: warning: connect_port: unknown keyword in MISC_CHECK, ignored as keepalived does; it belongs in HTTP_GET/SSL_GET"},
		{"bad http_protocol", vsrv(" real_server 10.0.0.2 80 {\n  HTTP_GET {\n   url {\n    path /\n   }\n   http_protocol 2\n  }\n }"),
			"/k.conf:8: error: http_protocol: \"2\" is not 1.0, 1.0C or 1.1"},
		{"sorry_server_inhibit order", vsrv(" sorry_server_inhibit"),
			"/k.conf:3: error: sorry_server_inhibit: must follow sorry_server"},
		{"bad port", vsrv(" real_server 10.0.0.2 70000 {\n }"),
			"/k.conf:3: error: real_server: real server port \"70000\" is not a number from 0 to 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := Parse("/k.conf", tt.conf, nil, Options{})
			got := strings.TrimSpace(diags.String())
			if got != tt.want {
				t.Errorf("config:\n%s\ngot:\n%s\nwant:\n%s", tt.conf, got, tt.want)
			}
			// --strict turns exactly the lenient warnings into errors.
			want := append(Diagnostics(nil), diags...)
			for i := range want {
				if want[i].Lenient {
					want[i].Severity = Error
					want[i].Message += StrictSuffix
				}
			}
			_, strict := Parse("/k.conf", tt.conf, nil, Options{Strict: true})
			if got, want := strict.String(), want.String(); got != want {
				t.Errorf("config:\n%s\nstrict:\n%s\nwant:\n%s", tt.conf, got, want)
			}
		})
	}
}
