package ipvstest

import (
	"errors"
	"maps"
	"net/netip"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/directord/directord/ipvs"
)

// Kernel is the kernel's IPVS in memory, for the tests of ipvs and
// director: it answers what an *ipvs.Client answers over the real
// kernel, errors included (the same *ipvs.Error, errno and words), and
// holds what the kernel would hold, normalised as the kernel normalises
// it. TestFakeMatchesKernel runs one sequence of calls against it and
// against the kernel of the User-Mode Linux guest, and compares every
// answer, so the two cannot drift apart. What it models:
//
//   - a service added twice, or a destination, is EEXIST; an operation on
//     a missing service is ESRCH ("no such service"), on a missing
//     destination ENOENT ("no such destination"); an unknown scheduler or
//     persistence engine is ENOENT; a destination whose lower threshold
//     is above its upper one is ERANGE (an upper of 0, "no bound",
//     included);
//   - the kernel sets its own flag (IP_VS_SVC_F_HASHED) on every
//     service; the Client masks it off, so neither reports it;
//   - a service's netmask 0 reads back as the whole address (32, 128),
//     its timeout in whole seconds; connection timeouts are set in whole
//     seconds rounded up, a zero leaving one as it is, and start at the
//     kernel's 900, 120 and 300 s;
//   - a service's destinations are listed in the kernel's order: a new
//     one goes to the head (ip_vs_add_dest's list_add_rcu), an edited
//     one keeps its place, so the order is the history of the table's
//     additions, latest first, which the mh scheduler's table follows;
//   - a destination reads back as it was given: a NAT destination on one
//     of the director's own addresses stays NAT (it is not reported as
//     IP_VS_CONN_F_LOCALNODE, whatever older documents say), and one of
//     a firewall-mark service keeps its port;
//   - a sync daemon's unset maximum length, group, port and TTL read
//     back as the kernel's defaults; a second daemon of one role is
//     EEXIST, stopping a role that does not run ESRCH, an unknown
//     interface ENODEV.
//
// Its zero value is an empty kernel whose links all exist with an MTU of
// 1500. It is safe for concurrent use.
type Kernel struct {
	// Links are the interfaces sync daemons may use, with their MTU; nil
	// means that every name is a link of MTU 1500.
	Links    map[string]int
	mu       sync.Mutex
	fail     func(*ipvs.Op) syscall.Errno
	t        ipvs.Table
	timeouts ipvs.Timeouts
	daemons  map[ipvs.SyncState]ipvs.SyncDaemon
	applied  []ipvs.Op
	calls    map[string]int
	sysctls  map[string]string
}

// Sysctls are the net.ipv4.vs settings the fake has, at the kernel's
// defaults; another name is os.ErrNotExist, as its /proc/sys file.
var Sysctls = map[string]string{"sloppy_tcp": "0", "sloppy_sctp": "0", "expire_nodest_conn": "0", "conntrack": "0"}

// Sysctl reads a net.ipv4.vs setting.
func (k *Kernel) Sysctl(name string) (string, error) {
	defer k.enter("Sysctl")()
	v, ok := k.sysctls[name]
	if !ok {
		return "", &os.PathError{Op: "open", Path: "/proc/sys/net/ipv4/vs/" + name, Err: os.ErrNotExist}
	}
	return v, nil
}

// SetSysctl writes a net.ipv4.vs setting.
func (k *Kernel) SetSysctl(name, value string) error {
	defer k.enter("SetSysctl")()
	if _, ok := k.sysctls[name]; !ok {
		return &os.PathError{Op: "open", Path: "/proc/sys/net/ipv4/vs/" + name, Err: os.ErrNotExist}
	}
	k.sysctls[name] = value
	return nil
}

// Schedulers are the schedulers the guest's kernel (Debian's 6.1) has;
// another is ENOENT.
var Schedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh"}

// PersistenceEngines are the persistence engines it has.
var PersistenceEngines = []string{"sip"}

// DefaultTimeouts are the kernel's connection timeouts before any is set.
var DefaultTimeouts = ipvs.Timeouts{TCP: 900 * time.Second, TCPFin: 120 * time.Second, UDP: 300 * time.Second}

// The kernel's sync daemon defaults (net/netfilter/ipvs/ip_vs_sync.c).
var DefaultSyncGroup = netip.MustParseAddr("224.0.0.81")

const (
	DefaultSyncPort = 8848
	DefaultSyncTTL  = 1
)

func (k *Kernel) init() {
	if k.t == nil {
		k.t = ipvs.Table{}
		k.timeouts = DefaultTimeouts
		k.daemons = map[ipvs.SyncState]ipvs.SyncDaemon{}
		k.calls = map[string]int{}
		k.sysctls = maps.Clone(Sysctls)
	}
}

func (k *Kernel) enter(method string) func() {
	k.mu.Lock()
	k.init()
	k.calls[method]++
	return k.mu.Unlock
}

// SetFail makes fail, unless nil, be asked before each operation of
// Apply: a non-zero errno is that operation's answer, and the table is
// left as it was (an out-of-memory kernel, a module that is missing).
func (k *Kernel) SetFail(fail func(*ipvs.Op) syscall.Errno) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fail = fail
}

// Calls is how many times method ("Apply", "Services", "Flush", ...) was
// called.
func (k *Kernel) Calls(method string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls[method]
}

// Applied are the operations of Apply that succeeded, in order.
func (k *Kernel) Applied() []ipvs.Op {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.applied)
}

// Table is a copy of the kernel's table, as Services and Destinations
// would read it.
func (k *Kernel) Table() ipvs.Table {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.init()
	t := make(ipvs.Table, len(k.t))
	for key, vs := range k.t {
		t[key] = vs.Clone()
	}
	return t
}

// Load adds t's services and destinations, as ipvsadm -R would: a table
// someone made before the test.
func (k *Kernel) Load(t ipvs.Table) error {
	var ops []ipvs.Op
	for _, key := range t.Keys() {
		ops = append(ops, ipvs.Op{Kind: ipvs.AddService, Service: t[key].Service})
		for _, d := range t[key].SortedDests() {
			ops = append(ops, ipvs.Op{Kind: ipvs.AddDest, Service: t[key].Service, Dest: d})
		}
	}
	return k.Apply(ops)
}

// Services lists the virtual services, in the table's order.
func (k *Kernel) Services() ([]ipvs.Service, error) {
	defer k.enter("Services")()
	out := make([]ipvs.Service, 0, len(k.t))
	for _, key := range k.t.Keys() {
		out = append(out, k.t[key].Service)
	}
	return out, nil
}

// Service gets one virtual service.
func (k *Kernel) Service(key ipvs.ServiceKey) (ipvs.Service, error) {
	defer k.enter("Service")()
	vs, ok := k.t[key]
	if !ok {
		return ipvs.Service{ServiceKey: key}, ipvs.KernelError("get service", key.String(), syscall.ESRCH)
	}
	return vs.Service, nil
}

// Destinations lists a service's destinations in the kernel's order, the
// one added last first; the kernel's dump of a missing service's is
// empty, not an error.
func (k *Kernel) Destinations(key ipvs.ServiceKey) ([]ipvs.Destination, error) {
	defer k.enter("Destinations")()
	vs, ok := k.t[key]
	if !ok {
		return []ipvs.Destination{}, nil
	}
	return vs.OrderedDests(), nil
}

// Apply carries out ops in order, as the Client does: every op is tried,
// and the error joins one *ipvs.Error per failure.
func (k *Kernel) Apply(ops []ipvs.Op) error {
	defer k.enter("Apply")()
	var errs []error
	for i := range ops {
		o := &ops[i]
		if err := o.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		errno := syscall.Errno(0)
		if k.fail != nil {
			errno = k.fail(o)
		}
		if errno == 0 {
			errno = k.apply(o)
		}
		if errno != 0 {
			errs = append(errs, ipvs.OpError(o, errno))
			continue
		}
		k.applied = append(k.applied, *o)
	}
	return errors.Join(errs...)
}

func (k *Kernel) apply(o *ipvs.Op) syscall.Errno {
	vs, exists := k.t[o.Service.ServiceKey]
	switch o.Kind {
	case ipvs.AddService, ipvs.EditService:
		switch {
		case o.Kind == ipvs.AddService && exists:
			return syscall.EEXIST
		case o.Kind == ipvs.EditService && !exists:
			return syscall.ESRCH
		case !slices.Contains(Schedulers, o.Service.Scheduler),
			o.Service.PersistenceEngine != "" && !slices.Contains(PersistenceEngines, o.Service.PersistenceEngine):
			return syscall.ENOENT
		}
		s := normalService(o.Service)
		if exists {
			vs.Service = s
		} else {
			k.t.Add(s)
		}
		return 0
	case ipvs.DelService:
		if !exists {
			return syscall.ESRCH
		}
		delete(k.t, o.Service.ServiceKey)
		return 0
	}
	if !exists {
		return syscall.ESRCH
	}
	d := normalDest(o.Dest)
	_, there := vs.Dest(d.Key())
	switch o.Kind {
	case ipvs.AddDest, ipvs.EditDest:
		switch {
		case o.Kind == ipvs.AddDest && there:
			return syscall.EEXIST
		case o.Kind == ipvs.EditDest && !there:
			return syscall.ENOENT
		case d.LowerThreshold > d.UpperThreshold:
			return syscall.ERANGE
		}
		vs.PushDest(d)
	case ipvs.DelDest:
		if !there {
			return syscall.ENOENT
		}
		vs.DelDest(d.Key())
	}
	return 0
}

// normalService is s as the kernel reports it back.
func normalService(s ipvs.Service) ipvs.Service {
	s.Stats = ipvs.Stats{}
	s.Timeout = s.Timeout.Truncate(time.Second)
	if s.Netmask == 0 {
		s.Netmask = 32
		if s.Family == ipvs.IPv6 {
			s.Netmask = 128
		}
	}
	return s
}

// normalDest is d as the kernel reports it back.
func normalDest(d ipvs.Destination) ipvs.Destination {
	d.TableWeight = 0
	d.Counters = nil
	return d
}

// Flush removes every service.
func (k *Kernel) Flush() error {
	defer k.enter("Flush")()
	k.t = ipvs.Table{}
	return nil
}

// Zero resets the counters, which the fake does not count.
func (k *Kernel) Zero() error {
	defer k.enter("Zero")()
	return nil
}

// Timeouts reads the connection timeouts.
func (k *Kernel) Timeouts() (ipvs.Timeouts, error) {
	defer k.enter("Timeouts")()
	return k.timeouts, nil
}

// SetTimeouts sets the non-zero ones, in whole seconds rounded up as the
// Client sends them.
func (k *Kernel) SetTimeouts(t ipvs.Timeouts) error {
	defer k.enter("SetTimeouts")()
	for _, v := range []struct{ set, cur *time.Duration }{
		{&t.TCP, &k.timeouts.TCP}, {&t.TCPFin, &k.timeouts.TCPFin}, {&t.UDP, &k.timeouts.UDP},
	} {
		if *v.set > 0 {
			*v.cur = (*v.set + time.Second - 1).Truncate(time.Second)
		}
	}
	return nil
}

// SyncDaemons lists the running sync daemons, master first.
func (k *Kernel) SyncDaemons() ([]ipvs.SyncDaemon, error) {
	defer k.enter("SyncDaemons")()
	var out []ipvs.SyncDaemon
	for _, st := range []ipvs.SyncState{ipvs.SyncMaster, ipvs.SyncBackup} {
		if d, ok := k.daemons[st]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// StartSyncDaemon starts a daemon, filling in the kernel's defaults: the
// maximum length is the link's MTU less the IP and UDP headers.
func (k *Kernel) StartSyncDaemon(d ipvs.SyncDaemon) error {
	defer k.enter("StartSyncDaemon")()
	fail := func(errno syscall.Errno) error { return ipvs.KernelError("start sync daemon", d.String(), errno) }
	mtu := 1500
	if k.Links != nil {
		m, ok := k.Links[d.Interface]
		if !ok {
			return fail(syscall.ENODEV)
		}
		mtu = m
	}
	if _, ok := k.daemons[d.State]; ok {
		return fail(syscall.EEXIST)
	}
	if !d.Group.IsValid() {
		d.Group = DefaultSyncGroup
	}
	if d.MaxLen == 0 {
		hdr := 20 + 8
		if d.Group.Is6() {
			hdr = 40 + 8
		}
		d.MaxLen = uint16(mtu - hdr)
	}
	if d.Port == 0 {
		d.Port = DefaultSyncPort
	}
	if d.TTL == 0 {
		d.TTL = DefaultSyncTTL
	}
	k.daemons[d.State] = d
	return nil
}

// StopSyncDaemon stops the daemon of a role.
func (k *Kernel) StopSyncDaemon(st ipvs.SyncState) error {
	defer k.enter("StopSyncDaemon")()
	if _, ok := k.daemons[st]; !ok {
		return ipvs.KernelError("stop sync daemon", st.String(), syscall.ESRCH)
	}
	delete(k.daemons, st)
	return nil
}
