package lab

import (
	_ "embed"
	"net/netip"
	"strings"
	"text/template"
	"time"
)

// The lab's addresses: a client LAN (client and router) and a service LAN
// (router, directors, real servers, VIP).
var (
	ClientAddr     = netip.MustParseAddr("10.2.0.2")
	RouterOutside  = netip.MustParseAddr("10.2.0.1")
	RouterInside   = netip.MustParseAddr("10.1.0.254")
	DirectorAddrs  = []netip.Addr{netip.MustParseAddr("10.1.0.11"), netip.MustParseAddr("10.1.0.12")}
	RealAddrs      = []netip.Addr{netip.MustParseAddr("10.1.0.21"), netip.MustParseAddr("10.1.0.22"), netip.MustParseAddr("10.1.0.23")}
	VIP            = netip.MustParseAddr("10.1.0.100")
	ServicePort    = uint16(443)
	ServiceAddress = netip.AddrPortFrom(VIP, ServicePort)
)

// Priorities of lb1 and lb2; lb1 preempts.
var Priorities = []int{150, 100}

// Timing that follows from the configuration (lab.conf.tmpl).
const (
	// AdvertInt is VI_1's advert_int.
	AdvertInt = time.Second
	// SkewTime is lb2's Skew_Time, (256 - 100) / 256 x advert_int: how
	// long it waits after a master's priority 0 advert.
	SkewTime = (256 - 100) * AdvertInt / 256
	// MasterDownInterval is lb2's, 3 x advert_int + Skew_Time: how long it
	// waits after a master's last advert.
	MasterDownInterval = 3*AdvertInt + SkewTime
	// DetectionBound: a real server that stops answering its SSL_GET
	// leaves the pool within delay_loop + (retry + 1) x connect_timeout +
	// retry x delay_before_retry = 1 + 2 x 1 + 1 x 1 s
	// (docs/healthchecks.md).
	DetectionBound = 4 * time.Second
	// RequestTimeout bounds one request, connection and TLS handshake
	// included: long enough for TCP's SYN retransmissions (at 1, 3 and 7
	// s) to outlast a failover, as a browser would wait.
	RequestTimeout = 10 * time.Second
	// Unstarved is the least of the machine a failed request must have
	// had, its window less what the machine withheld, for the failure
	// to be counted against the product: the same second the lab's
	// bounds allow a stall of the guest. A request that ran for less
	// than that in all was not given the time to be answered.
	Unstarved = time.Second
)

//go:embed lab.conf.tmpl
var confText string

var confTmpl = template.Must(template.New("lab.conf").Parse(confText))

// Config returns the directors' configuration (the same file for both,
// run with -i lb1 and -i lb2) balancing the service over reals.
func Config(reals []netip.Addr) string {
	var b strings.Builder
	if err := confTmpl.Execute(&b, struct {
		VIP   netip.Addr
		Reals []netip.Addr
	}{VIP, reals}); err != nil {
		panic(err) // the template is ours and takes any list
	}
	return b.String()
}

// The active-active lab's (Options.Active): three directors, each
// announcing the VIP to the router by BGP; no VRRP.
var (
	ActiveDirectorAddrs = []netip.Addr{netip.MustParseAddr("10.1.0.11"), netip.MustParseAddr("10.1.0.12"), netip.MustParseAddr("10.1.0.13")}
	// VIPPrefix is the route each director announces.
	VIPPrefix = netip.PrefixFrom(VIP, 32)
)

// The router's and the directors' AS numbers in the active lab.
const (
	RouterAS   = 65000
	DirectorAS = 65010
)

// RouterBFD is the router's BFD profile, as the directors' bfd 300 10: a
// director that goes silent is dropped within 3 s. Not the 100 ms x 3 a
// production router would run: in the guest, sharing one CPU with three
// directord and the client, on a busy machine, BFD at 300 ms reset every
// session within seconds of its start, again and again (both sides
// starved for seconds: docs/lab.md).
const RouterBFD = " receive-interval 300\n transmit-interval 300\n detect-multiplier 10"

//go:embed active.conf.tmpl
var activeText string

var activeTmpl = template.Must(template.New("active.conf").Parse(activeText))

// ActiveConfig returns the active-active directors' configuration (the
// same file for all three, run with -i lb1, lb2, lb3) balancing the
// service over reals with mh and announcing it to the router by BGP.
func ActiveConfig(reals []netip.Addr) string {
	var b strings.Builder
	if err := activeTmpl.Execute(&b, struct {
		VIP, Router netip.Addr
		Reals       []netip.Addr
	}{VIP, RouterInside, reals}); err != nil {
		panic(err) // the template is ours and takes any list
	}
	return b.String()
}
