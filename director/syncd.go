package director

import (
	"errors"
	"log/slog"
	"net/netip"

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
	if cfg == nil {
		return nil
	}
	d := ipvs.SyncDaemon{
		Interface: cfg.Interface,
		SyncID:    uint8(cfg.SyncID),
		MaxLen:    uint16(cfg.MaxLen),
		Group:     cfg.Group,
		Port:      uint16(cfg.Port),
		TTL:       uint8(cfg.TTL),
	}
	master, backup := d, d
	master.State, backup.State = ipvs.SyncMaster, ipvs.SyncBackup
	switch {
	case cfg.Instance == "":
		return []ipvs.SyncDaemon{master, backup}
	case state == vrrp.Master:
		return []ipvs.SyncDaemon{master}
	}
	return []ipvs.SyncDaemon{backup}
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

// SyncDaemons keeps the kernel's sync daemons as lvs_sync_daemon and the
// VRRP state of its instance want them: it starts what is missing, stops
// what is not wanted, restarts what differs, and leaves alone what is
// right, so that a reload that does not change lvs_sync_daemon does not
// interrupt the sync.
type SyncDaemons struct {
	k     SyncKernel
	log   *slog.Logger
	cfg   *config.SyncDaemon
	state vrrp.State
	ours  map[ipvs.SyncState]bool // the daemons this directord started
}

// NewSyncDaemons returns the controller; nothing changes until Apply.
func NewSyncDaemons(k SyncKernel, cfg *config.SyncDaemon, log *slog.Logger) *SyncDaemons {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SyncDaemons{k: k, cfg: cfg, log: log, state: vrrp.Backup, ours: map[ipvs.SyncState]bool{}}
}

// Instance is the VRRP instance the daemons follow, or "".
func (s *SyncDaemons) Instance() string {
	if s.cfg == nil {
		return ""
	}
	return s.cfg.Instance
}

// SetState records the instance's new state and applies it.
func (s *SyncDaemons) SetState(st vrrp.State) error {
	s.state = st
	return s.Apply()
}

// Reload takes a new lvs_sync_daemon (nil: none) and applies it.
func (s *SyncDaemons) Reload(cfg *config.SyncDaemon) error {
	s.cfg = cfg
	return s.Apply()
}

// Apply makes the kernel run the wanted daemons.
func (s *SyncDaemons) Apply() error {
	return s.apply(WantedSyncDaemons(s.cfg, s.state))
}

// Stop stops the daemons, at shutdown.
func (s *SyncDaemons) Stop() error { return s.apply(nil) }

// Without lvs_sync_daemon, directord leaves the kernel's daemons alone
// (someone may run them with ipvsadm), but for those it started itself
// before a reload took lvs_sync_daemon away.
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
