package config

// Differences are the keywords directord reads but runs differently from
// keepalived 2.2.7, by block (as docs/keywords.md names blocks), with what
// differs. The language-wide differences are in docs/configuration.md.
var Differences = map[string]map[string]string{
	"virtual_server": {
		"sorry_server": "the words after the port (lvs_method ...) are read as the sorry server's method; keepalived ignores them",
		"real_server":  "a real server listed twice in a virtual server is an error; keepalived drops it with a warning",
		"ha_suspend":   "on a virtual_server group, the checks run while any address of the group's ranges is on this host; keepalived 2.2.7's addr_matches does not match a group, so its checks there stay suspended",
	},
	"HTTP_GET/SSL_GET": {
		"url":           "a checker without url is an error; keepalived drops the checker silently, so the real server is never checked",
		"fast_recovery": "read, no effect: every URL is fetched at each probe",
	},
	"vrrp_sync_group": {
		"group": "members named without group { } are read as members, with a warning; keepalived reports an unknown keyword",
	},
}
