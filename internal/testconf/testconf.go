// Package testconf generates large keepalived configurations for tests and
// benchmarks: virtual servers with real servers, each checked by SSL_GET.
package testconf

import (
	"fmt"
	"strings"
)

// Large returns a configuration with one VRRP instance and vs virtual
// servers of rs real servers each, every real server with an SSL_GET check,
// as a photo CDN's director would have them. Addresses come from
// 10.0.0.0/8 (virtual) and 172.16.0.0/12 (real) and are never contacted.
func Large(vs, rs int) string {
	var b strings.Builder
	b.Grow(vs * rs * 200)
	b.WriteString(`global_defs {
    router_id bench
    lvs_sync_daemon eth0 VI_1
}

vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority 100
    advert_int 1
    virtual_ipaddress {
        10.1.0.0/32
    }
    virtual_ipaddress_excluded {
`)
	for v := 1; v < vs; v++ {
		fmt.Fprintf(&b, "        10.%d.%d.%d/32\n", 1+v>>16&0xff, v>>8&0xff, v&0xff)
	}
	b.WriteString("    }\n}\n")
	for v := 0; v < vs; v++ {
		fmt.Fprintf(&b, `
virtual_server 10.%d.%d.%d 443 {
    delay_loop 2
    lvs_sched rr
    lvs_method DR
    protocol TCP
    inhibit_on_failure
`, 1+v>>16&0xff, v>>8&0xff, v&0xff)
		for r := 0; r < rs; r++ {
			n := v*rs + r
			fmt.Fprintf(&b, `    real_server 172.%d.%d.%d 443 {
        weight 1
        SSL_GET {
            url {
                path /healthz
                status_code 200
            }
            connect_timeout 1
            retry 2
            delay_before_retry 1
        }
    }
`, 16+n>>16&0x0f, n>>8&0xff, n&0xff)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// Checked returns a configuration of vs virtual servers of rs real
// servers each, every real server checked by SSL_GET on /healthz every
// delay_loop 2 s, for the health-check benchmark: the real servers are
// 127.x.y.z:443 (loopback: one local HTTPS server answers for all of
// them), the virtual servers 10.x.y.z:443, with inhibit_on_failure.
func Checked(vs, rs int) string {
	var b strings.Builder
	b.Grow(vs * rs * 200)
	for v := 0; v < vs; v++ {
		fmt.Fprintf(&b, `virtual_server %s 443 {
    delay_loop 2
    lvs_sched rr
    lvs_method DR
    protocol TCP
    inhibit_on_failure
`, CheckedVS(v))
		for r := 0; r < rs; r++ {
			fmt.Fprintf(&b, `    real_server %s 443 {
        weight 1
        SSL_GET {
            url {
                path /healthz
                status_code 200
            }
            connect_timeout 2
            retry 1
            delay_before_retry 1
        }
    }
`, CheckedRS(v*rs+r))
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// CheckedVS is the address of Checked's virtual server v.
func CheckedVS(v int) string { return fmt.Sprintf("10.%d.%d.%d", 1+v>>16&0xff, v>>8&0xff, v&0xff) }

// CheckedRS is the address of Checked's real server n.
func CheckedRS(n int) string {
	return fmt.Sprintf("127.%d.%d.%d", 1+n/(250*256), n/250%256, 1+n%250)
}

// Table returns a configuration of vs virtual servers of rs real servers
// each and no checkers (a real server without a checker is up), for the
// benchmarks of the daemons' IPVS work: the virtual servers are those of
// Checked, the real servers those of Large. With changed, one real server
// (TableChanged) has weight 2 instead of 1: a reload with one change.
func Table(vs, rs int, changed bool) string {
	var b strings.Builder
	b.Grow(vs * rs * 60)
	cv, cr := TableChanged(vs, rs)
	for v := 0; v < vs; v++ {
		fmt.Fprintf(&b, "virtual_server %s 443 {\n    lvs_sched rr\n    lvs_method DR\n    protocol TCP\n", CheckedVS(v))
		for r := 0; r < rs; r++ {
			n, w := v*rs+r, 1
			if changed && v == cv && r == cr {
				w = 2
			}
			fmt.Fprintf(&b, "    real_server %s 443 {\n        weight %d\n    }\n", TableRS(n), w)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// TableChanged is the virtual server and the real server (its index in
// the virtual server) whose weight Table's changed version sets to 2.
func TableChanged(vs, rs int) (v, r int) { return vs / 2, rs - 1 }

// TableRS is the address of Table's real server n.
func TableRS(n int) string { return fmt.Sprintf("172.%d.%d.%d", 16+n>>16&0x0f, n>>8&0xff, n&0xff) }
