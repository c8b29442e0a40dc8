package lab

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// parseConns reads the kernel's /proc/net/ip_vs_conn (IPv4 lines; the
// addresses and ports in hexadecimal):
//
//	Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData
//	TCP 0A020002 C350 0A010064 01BB 0A010015 01BB ESTABLISHED     899
func parseConns(text string) ([]ConnEntry, error) {
	var out []ConnEntry
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 {
			continue
		}
		if len(f) < 9 {
			return nil, fmt.Errorf("ip_vs_conn line %d: %q", i+1, line)
		}
		var ap [3]netip.AddrPort
		for j := range ap {
			a, err1 := strconv.ParseUint(f[1+2*j], 16, 32)
			p, err2 := strconv.ParseUint(f[2+2*j], 16, 16)
			if err1 != nil || err2 != nil || len(f[1+2*j]) != 8 {
				return nil, fmt.Errorf("ip_vs_conn line %d: %q", i+1, line)
			}
			ap[j] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), uint16(p))
		}
		out = append(out, ConnEntry{Client: ap[0], Virtual: ap[1], Real: ap[2], State: f[7]})
	}
	return out, nil
}
