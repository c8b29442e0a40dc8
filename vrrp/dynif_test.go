package vrrp

import "testing"

func TestSockStep(t *testing.T) {
	eth := LinkSeen{Exists: true, Index: 4}
	again := LinkSeen{Exists: true, Index: 9}
	mv := LinkSeen{Exists: true, Index: 9, Macvlan: true, Parent: "eth0"}
	mvOther := LinkSeen{Exists: true, Index: 9, Macvlan: true, Parent: "eth1"}
	gone := LinkSeen{}
	tests := []struct {
		name       string
		open       int
		first, now LinkSeen
		allow      bool
		want       SockStep
	}{
		{"open, unchanged", 4, eth, eth, false, SockKeep},
		{"open, deleted", 4, eth, gone, false, SockClose},
		{"open, this link deleted", 4, eth, LinkSeen{Index: 4}, false, SockClose},
		{"open on the new link, the old one's deletion seen late", 9, eth, LinkSeen{Index: 4}, false, SockKeep},
		{"closed, still missing", 0, eth, gone, false, SockKeep},
		{"never seen, still missing", 0, gone, gone, false, SockKeep},
		{"never seen, created", 0, gone, eth, false, SockOpen},
		{"never seen, created as a macvlan", 0, gone, mv, false, SockOpen},
		{"deleted, created again", 0, eth, again, false, SockOpen},
		{"made again under us", 4, eth, again, false, SockReopen},
		{"back as a macvlan", 0, eth, mv, false, SockRefuse},
		{"back as a macvlan, allowed", 0, eth, mv, true, SockOpen},
		{"macvlan back on another parent", 0, mv, mvOther, false, SockRefuse},
		{"macvlan back on another parent, allowed", 0, mv, mvOther, true, SockOpen},
		{"macvlan back plain", 0, mv, again, false, SockRefuse},
		{"macvlan made again under us as another kind", 9, mv, LinkSeen{Exists: true, Index: 12}, false, SockRefuse},
		{"macvlan back on its parent", 0, mv, LinkSeen{Exists: true, Index: 13, Macvlan: true, Parent: "eth0"}, false, SockOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sockStep(tt.open, tt.first, tt.now, tt.allow); got != tt.want {
				t.Errorf("sockStep(%d, %+v, %+v, %v) = %v, want %v", tt.open, tt.first, tt.now, tt.allow, got, tt.want)
			}
		})
	}
}
