package director

import (
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
	"github.com/directord/directord/vrrp"
)

// SyncKernel is what SyncDaemons needs of the kernel; *ipvs.Client is one.
type SyncKernel interface {
	SyncDaemons() ([]ipvs.SyncDaemon, error)
	StartSyncDaemon(ipvs.SyncDaemon) error
	StopSyncDaemon(ipvs.SyncState) error
}

// The kernel's defaults, which it reports for a daemon started without
// them.
var (
	defaultSyncGroup = netip.MustParseAddr("224.0.0.81")
	defaultSyncPort  = uint16(8848)
	defaultSyncTTL   = uint8(1)
)

// WantedSyncDaemons are the sync daemons that run for lvs_sync_daemon cfg
// while its VRRP instance is in state: the master daemon on a master,
// which sends the connections it schedules, and the backup daemon
// otherwise, which receives them, so that a backup taking over already
// knows them. Without an instance, both run all along.
func WantedSyncDaemons(cfg *config.SyncDaemon, state vrrp.State) []ipvs.SyncDaemon {
	switch {
	case cfg == nil:
		return nil
	case cfg.Instance == "":
		return []ipvs.SyncDaemon{syncDaemon(cfg, ipvs.SyncMaster), syncDaemon(cfg, ipvs.SyncBackup)}
	case state == vrrp.Master:
		return []ipvs.SyncDaemon{syncDaemon(cfg, ipvs.SyncMaster)}
	}
	return []ipvs.SyncDaemon{syncDaemon(cfg, ipvs.SyncBackup)}
}

// syncDaemon is the daemon of role st that cfg describes.
func syncDaemon(cfg *config.SyncDaemon, st ipvs.SyncState) ipvs.SyncDaemon {
	return ipvs.SyncDaemon{
		State:     st,
		Interface: cfg.Interface,
		SyncID:    uint8(cfg.SyncID),
		MaxLen:    uint16(cfg.MaxLen),
		Group:     cfg.Group,
		Port:      uint16(cfg.Port),
		TTL:       uint8(cfg.TTL),
	}
}

// sameDaemon tells whether the kernel's daemon is the wanted one; what
// the wanted one leaves at zero is the kernel's default (and maxlen the
// kernel derives from the interface's MTU).
func sameDaemon(want, have ipvs.SyncDaemon) bool {
	g, p, ttl := want.Group, want.Port, want.TTL
	if !g.IsValid() {
		g = defaultSyncGroup
	}
	if p == 0 {
		p = defaultSyncPort
	}
	if ttl == 0 {
		ttl = defaultSyncTTL
	}
	return want.State == have.State && want.Interface == have.Interface && want.SyncID == have.SyncID &&
		(want.MaxLen == 0 || want.MaxLen == have.MaxLen) && g == have.Group && p == have.Port && ttl == have.TTL
}

// SyncFlush is how long the role a transition takes away keeps running
// beside the new one. The kernel's master daemon sends the connections
// it has gathered when its message is full or 2 s after the first
// (IPVS_SYNC_FLUSH_TIME, looked at every second), and stopping it throws
// away what it has not sent: a master that stopped its daemon at once
// would keep the connections of its last seconds from the new master,
// and one that stopped its backup daemon at once would not hear them.
// So the old master's master daemon and the new master's backup daemon
// run 4 s more (3 s of the kernel and 1 s for the two directors'
// transitions to be apart); the kernel runs both roles at once.
const SyncFlush = 4 * time.Second

// SyncDaemons keeps the kernel's sync daemons as lvs_sync_daemon and the
// VRRP state of its instance want them: it starts what is missing, stops
// what is not wanted, restarts what differs, and leaves alone what is
// right, so that a reload that does not change lvs_sync_daemon does not
// interrupt the sync. The role a transition takes away runs SyncFlush
// more; Next says when to Apply again to end it.
type SyncDaemons struct {
	k     SyncKernel
	log   *slog.Logger
	cfg   *config.SyncDaemon
	state vrrp.State
	ours  map[ipvs.SyncState]bool // the daemons this directord started

	now    func() time.Time
	linger map[ipvs.SyncState]time.Time // a role gone, kept until then
}

// NewSyncDaemons returns the controller; nothing changes until Apply.
func NewSyncDaemons(k SyncKernel, cfg *config.SyncDaemon, log *slog.Logger) *SyncDaemons {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SyncDaemons{k: k, cfg: cfg, log: log, state: vrrp.Backup, ours: map[ipvs.SyncState]bool{},
		now: time.Now, linger: map[ipvs.SyncState]time.Time{}}
}

// Instance is the VRRP instance the daemons follow, or "".
func (s *SyncDaemons) Instance() string {
	if s.cfg == nil {
		return ""
	}
	return s.cfg.Instance
}

// SetState records the instance's new state and applies it. Into or out
// of Master, the role that goes runs SyncFlush more if this directord
// runs it.
func (s *SyncDaemons) SetState(st vrrp.State) error {
	if was := s.state == vrrp.Master; was != (st == vrrp.Master) && s.Instance() != "" {
		gone := ipvs.SyncBackup
		if was {
			gone = ipvs.SyncMaster
		}
		if s.ours[gone] {
			s.linger[gone] = s.now().Add(SyncFlush)
		}
	}
	s.state = st
	return s.Apply()
}

// Next is when a role kept after a transition is due to stop (Apply
// stops it then), or the zero time.
func (s *SyncDaemons) Next() time.Time {
	var next time.Time
	for _, t := range s.linger {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}

// FlushWait is how long a stop should wait for the master daemon to send
// the connections it has gathered: a master (or one that was, within
// SyncFlush) that stops its daemon at once throws away its last seconds
// of connections, which the backup taking over needs.
func (s *SyncDaemons) FlushWait() time.Duration {
	if s.Instance() == "" || !s.ours[ipvs.SyncMaster] {
		return 0
	}
	if s.state == vrrp.Master {
		return SyncFlush
	}
	if t, ok := s.linger[ipvs.SyncMaster]; ok {
		return max(0, t.Sub(s.now()))
	}
	return 0
}

// Reload takes a new lvs_sync_daemon (nil: none) and applies it.
func (s *SyncDaemons) Reload(cfg *config.SyncDaemon) error {
	s.cfg = cfg
	return s.Apply()
}

// Apply makes the kernel run the wanted daemons, and keeps those of a
// role a transition took away running until SyncFlush has passed.
func (s *SyncDaemons) Apply() error {
	now := s.now()
	for st, until := range s.linger {
		if !now.Before(until) || s.cfg == nil {
			delete(s.linger, st)
		}
	}
	return s.apply(WantedSyncDaemons(s.cfg, s.state))
}

// Stop stops the daemons, at shutdown (see FlushWait).
func (s *SyncDaemons) Stop() error {
	clear(s.linger)
	return s.apply(nil)
}

// Without lvs_sync_daemon, directord leaves the kernel's daemons alone
// (someone may run them with ipvsadm), but for those it started itself
// before a reload took lvs_sync_daemon away. A lingering role that runs
// as configured is kept; one that does not is not started for it.
func (s *SyncDaemons) apply(want []ipvs.SyncDaemon) error {
	if s.cfg == nil && len(s.ours) == 0 {
		return nil
	}
	have, err := s.k.SyncDaemons()
	if err != nil {
		return err
	}
	// Stops first: the role that goes ends before the one that comes.
	var errs []error
	var start []ipvs.SyncDaemon
	for _, st := range []ipvs.SyncState{ipvs.SyncMaster, ipvs.SyncBackup} {
		w, wok := find(want, st)
		h, hok := find(have, st)
		if _, ok := s.linger[st]; ok {
			if !wok && hok && s.ours[st] && sameDaemon(syncDaemon(s.cfg, st), h) {
				continue
			}
			delete(s.linger, st)
		}
		if hok && wok && sameDaemon(w, h) {
			continue
		}
		if hok && (s.cfg != nil || s.ours[st]) {
			s.log.Info("stopping the IPVS sync daemon", "state", st.String(), "interface", h.Interface, "syncid", h.SyncID)
			if err := s.k.StopSyncDaemon(st); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(s.ours, st)
		}
		if wok {
			start = append(start, w)
		}
	}
	for _, w := range start {
		s.log.Info("starting the IPVS sync daemon", "state", w.State.String(), "interface", w.Interface, "syncid", w.SyncID)
		if err := s.k.StartSyncDaemon(w); err != nil {
			errs = append(errs, err)
			continue
		}
		s.ours[w.State] = true
	}
	return errors.Join(errs...)
}

func find(ds []ipvs.SyncDaemon, st ipvs.SyncState) (ipvs.SyncDaemon, bool) {
	for _, d := range ds {
		if d.State == st {
			return d, true
		}
	}
	return ipvs.SyncDaemon{}, false
}
