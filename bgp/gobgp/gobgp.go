// Package gobgp is the BGP speaker directord runs: bgp.Speaker
// implemented by an embedded github.com/osrg/gobgp/v4 server, whose types
// stay inside this package. Only the helper process directord-bgp links
// it (cmd/directord-bgp, bgp.Server); directord itself talks to that
// helper through bgp.Process and never links GoBGP, gRPC or their
// protobuf types.
//
// # Network namespaces
//
// The server listens and connects in the network namespace of the
// process: the helper is started in directord's.
package gobgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"strconv"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	gbgp "github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/directord/directord/bgp"
	"github.com/directord/directord/config"
)

// GoBGP is a bgp.Speaker run by an embedded github.com/osrg/gobgp/v4 server.
type GoBGP struct {
	log *slog.Logger
	// OnSession, if set before Start, sees every session change; it must
	// not block.
	OnSession func(bgp.SessionEvent)

	mu        sync.Mutex
	s         *server.BgpServer
	cfg       *config.BGP
	neighbors map[netip.Addr]*config.Neighbor
	paths     map[netip.Prefix]*apiutil.Path
	stopWatch context.CancelFunc
	// policies are the export statements of the neighbors with their own
	// attributes (communities, med, local_pref).
	policies   bool
	lastPolicy string

	// BFD follows its BGP session (bfdFollow): bfdOn holds the neighbors
	// whose BFD is running (under mu); established, under estMu, the
	// sessions the watch last saw Established; kick wakes the goroutine
	// that brings the first to the second.
	bfdOn       map[netip.Addr]bool
	estMu       sync.Mutex
	established map[netip.Addr]bool
	kick        chan struct{}
	stopBFD     chan struct{}
	bfdDone     chan struct{}
}

// New makes a speaker; it runs nothing before Start.
func New(log *slog.Logger) *GoBGP {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &GoBGP{log: log, neighbors: map[netip.Addr]*config.Neighbor{}, paths: map[netip.Prefix]*apiutil.Path{},
		bfdOn: map[netip.Addr]bool{}, established: map[netip.Addr]bool{}, kick: make(chan struct{}, 1)}
}

// minLevel passes on the records at or above its level.
type minLevel struct {
	slog.Handler
	min slog.Leveler
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min.Level() && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }

// Start runs the GoBGP server in this goroutine's network namespace.
func (g *GoBGP) Start(ctx context.Context, cfg *config.BGP) error {
	rid, err := bgp.RouterID(cfg)
	if err != nil {
		return fmt.Errorf("bgp: %w", err)
	}
	lvl := &slog.LevelVar{}
	lvl.Set(slog.LevelWarn)
	// GoBGP logs every step at info; directord logs the session changes
	// itself (OnSession), so only GoBGP's warnings and errors go through.
	glog := slog.New(minLevel{g.log.Handler(), lvl}).With("component", "gobgp")
	s := server.NewBgpServer(server.LoggerOption(glog, lvl))
	go s.Serve()
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: cfg.LocalAS, RouterId: rid.String(), ListenPort: int32(cfg.ListenPort),
	}}); err != nil {
		s.Stop()
		return fmt.Errorf("bgp: start the speaker (AS %d, router_id %s): %w", cfg.LocalAS, rid, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	if err := s.WatchEvent(wctx, server.WatchEventMessageCallbacks{OnPeerUpdate: g.peerEvent}, server.WatchPeer()); err != nil {
		cancel()
		s.Stop()
		return fmt.Errorf("bgp: watch the sessions: %w", err)
	}
	g.mu.Lock()
	g.s, g.stopWatch, g.cfg = s, cancel, cfg
	g.stopBFD, g.bfdDone = make(chan struct{}), make(chan struct{})
	go g.bfdFollow(g.stopBFD, g.bfdDone)
	g.mu.Unlock()
	if err := g.Configure(ctx, cfg); err != nil {
		g.Stop(ctx)
		return err
	}
	g.log.Info("bgp speaker started", "local_as", cfg.LocalAS, "router_id", rid.String(), "neighbors", len(cfg.Neighbors))
	return nil
}

func (g *GoBGP) peerEvent(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
	if ev.Type != apiutil.PEER_EVENT_STATE {
		return
	}
	st := fsmState(ev.Peer.State.SessionState)
	if a := ev.Peer.State.NeighborAddress; a.IsValid() {
		g.estMu.Lock()
		was := g.established[a]
		g.established[a] = st == bgp.Established
		g.estMu.Unlock()
		if was != (st == bgp.Established) {
			select {
			case g.kick <- struct{}{}:
			default:
			}
		}
	}
	if g.OnSession == nil {
		return
	}
	reason := ""
	if st != bgp.Established {
		reason = disconnectReason(ev.Peer.State.DisconnectReason, ev.Peer.State.DisconnectMessage)
	}
	g.OnSession(bgp.SessionEvent{Neighbor: ev.Peer.State.NeighborAddress, State: st, Reason: reason})
}

// bfdFollow runs each neighbor's BFD only while its BGP session is
// Established: turned on (UpdatePeer, which does not reset the session)
// when the session comes up, off when it goes down, until stop.
//
// Why: a router's BFD session for a BGP neighbor may be made before the
// BGP session, with no local address, and remade with the session's
// local address and interface when BGP is Established, under a new
// discriminator. FRR does so (bgp_peer_bfd_update_source; FRRouting/frr
// issue 17337, Debian 12's 8.4.4 among the versions). Had our BFD come
// Up with the first, FRR's bgpd reads the remade session's Down as a
// failure and ends the new BGP session (Cease/BFD Down), and GoBGP,
// which drops packets of a discriminator other than the one it has
// bound (RFC 5880 6.8.6), lets its session expire and resets the BGP
// session ("BFD is down"): every session came up twice, its routes
// announced, withdrawn and announced again, at each start. With BFD
// started after the session, there is no Up session to remake: both
// sides begin theirs from Down. Junos, too, starts a BGP neighbor's
// BFD once the session is up. BFD guards the routes the session
// carries; while it is not Established there are none.
func (g *GoBGP) bfdFollow(stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-g.kick:
		}
		g.estMu.Lock()
		est := maps.Clone(g.established)
		g.estMu.Unlock()
		g.mu.Lock()
		if g.s != nil {
			for a, n := range g.neighbors {
				if n.BFD == nil || g.bfdOn[a] == est[a] {
					continue
				}
				_, err := g.s.UpdatePeer(context.Background(), &api.UpdatePeerRequest{Peer: peerOf(g.cfg, n, est[a])})
				if err != nil {
					g.log.Warn("bgp: BFD not turned on or off with its session", "neighbor", a.String(), "established", est[a], "err", err)
					continue
				}
				g.bfdOn[a] = est[a]
			}
		}
		g.mu.Unlock()
	}
}

func fsmState(s gbgp.FSMState) bgp.SessionState {
	switch s {
	case gbgp.BGP_FSM_CONNECT:
		return bgp.Connect
	case gbgp.BGP_FSM_ACTIVE:
		return bgp.Active
	case gbgp.BGP_FSM_OPENSENT:
		return bgp.OpenSent
	case gbgp.BGP_FSM_OPENCONFIRM:
		return bgp.OpenConfirm
	case gbgp.BGP_FSM_ESTABLISHED:
		return bgp.Established
	}
	return bgp.Idle
}

func disconnectReason(r api.PeerState_DisconnectReason, msg string) string {
	if r == api.PeerState_DISCONNECT_REASON_UNSPECIFIED {
		return msg
	}
	s := r.String()
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// Configure applies cfg's neighbors: added, deleted, or replaced when
// changed; the export policy that gives each its attributes is rebuilt
// only when those changed.
func (g *GoBGP) Configure(ctx context.Context, cfg *config.BGP) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.s == nil {
		return errors.New("bgp: the speaker is not running")
	}
	want := map[netip.Addr]*config.Neighbor{}
	for _, n := range cfg.Neighbors {
		want[n.Addr] = n
	}
	var errs []error
	for a, old := range g.neighbors {
		if n, ok := want[a]; ok && config.Canonical(n) == config.Canonical(old) {
			continue
		}
		if err := g.s.DeletePeer(ctx, &api.DeletePeerRequest{Address: a.String()}); err != nil {
			errs = append(errs, fmt.Errorf("bgp: delete neighbor %s: %w", a, err))
			continue
		}
		delete(g.neighbors, a)
		delete(g.bfdOn, a)
	}
	if err := g.exportPolicy(ctx, cfg); err != nil {
		errs = append(errs, err)
	}
	for _, n := range cfg.Neighbors {
		if _, ok := g.neighbors[n.Addr]; ok {
			continue
		}
		// Added with BFD off: bfdFollow turns it on once the session is
		// up.
		if err := g.s.AddPeer(ctx, &api.AddPeerRequest{Peer: peerOf(cfg, n, false)}); err != nil {
			errs = append(errs, fmt.Errorf("bgp: add neighbor %s (%s): %w", n.Addr, n.Pos, err))
			continue
		}
		g.neighbors[n.Addr] = n
	}
	g.cfg = cfg
	select {
	case g.kick <- struct{}{}:
	default:
	}
	return errors.Join(errs...)
}

// peerOf is n as GoBGP's peer, with n's BFD running when bfd is true.
func peerOf(cfg *config.BGP, n *config.Neighbor, bfd bool) *api.Peer {
	hold := uint64(n.HoldTime / time.Second)
	p := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: n.Addr.String(), PeerAsn: n.RemoteAS, AuthPassword: n.Password},
		Timers: &api.Timers{Config: &api.TimersConfig{
			HoldTime: hold, KeepaliveInterval: hold / 3, ConnectRetry: 5,
			// Updates leave at once: an announce or a withdraw is what
			// this speaker is for.
			MinimumAdvertisementInterval: 0, IdleHoldTimeAfterReset: 1,
		}},
		Transport: &api.Transport{RemotePort: uint32(n.Port), PassiveMode: n.Passive},
	}
	if n.SourceAddress.IsValid() {
		p.Transport.LocalAddress = n.SourceAddress.String()
	}
	if n.Multihop > 0 {
		p.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(n.Multihop)}
	}
	if n.GracefulRestart {
		p.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: 120}
	}
	if b := n.BFD; b != nil {
		us := uint32(b.Interval / time.Microsecond)
		p.Bfd = &api.BfdPeerConfig{Enabled: bfd, DesiredMinimumTxInterval: us, RequiredMinimumReceive: us, DetectionMultiplier: uint32(b.Multiplier)}
	}
	afi := api.Family_AFI_IP
	if n.Addr.Is6() {
		afi = api.Family_AFI_IP6
	}
	p.AfiSafis = []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}}
	return p
}

// exportPolicy sets the global export policy: a statement per neighbor
// with communities, med or local_pref, matched on the neighbor the route
// goes to. Called with g.mu held.
func (g *GoBGP) exportPolicy(ctx context.Context, cfg *config.BGP) error {
	var stmts []*api.Statement
	var sets []*api.DefinedSet
	for _, n := range cfg.Neighbors {
		if len(n.Communities) == 0 && n.MED == nil && n.LocalPref == nil {
			continue
		}
		name := "directord-" + n.Addr.String()
		sets = append(sets, &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: name,
			List: []string{netip.PrefixFrom(n.Addr, n.Addr.BitLen()).String()}})
		act := &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT}
		if len(n.Communities) > 0 {
			var cs []string
			for _, c := range n.Communities {
				v, _ := config.ParseCommunity(c)
				cs = append(cs, strconv.FormatUint(uint64(v>>16), 10)+":"+strconv.FormatUint(uint64(v&0xffff), 10))
			}
			act.Community = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: cs}
		}
		if n.MED != nil {
			act.Med = &api.MedAction{Type: api.MedAction_TYPE_REPLACE, Value: int64(*n.MED)}
		}
		if n.LocalPref != nil {
			act.LocalPref = &api.LocalPrefAction{Value: *n.LocalPref}
		}
		stmts = append(stmts, &api.Statement{Name: name, Actions: act,
			Conditions: &api.Conditions{NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: name}}})
	}
	key := fmt.Sprint(stmts, sets)
	if g.policies {
		if key == g.lastPolicy {
			return nil
		}
		// Replace the old one whole.
		_ = g.s.DeletePolicyAssignment(ctx, &api.DeletePolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
			Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_EXPORT}, All: true})
		_ = g.s.DeletePolicy(ctx, &api.DeletePolicyRequest{Policy: &api.Policy{Name: "directord-export"}, All: true, PreserveStatements: false})
		g.policies = false
	}
	g.lastPolicy = key
	if len(stmts) == 0 {
		return nil
	}
	for _, s := range sets {
		_ = g.s.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: s, All: true})
		if err := g.s.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: s}); err != nil {
			return fmt.Errorf("bgp: neighbor set %s: %w", s.Name, err)
		}
	}
	pol := &api.Policy{Name: "directord-export", Statements: stmts}
	if err := g.s.AddPolicy(ctx, &api.AddPolicyRequest{Policy: pol}); err != nil {
		return fmt.Errorf("bgp: export policy: %w", err)
	}
	if err := g.s.AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_EXPORT,
		Policies: []*api.Policy{{Name: pol.Name}}, DefaultAction: api.RouteAction_ROUTE_ACTION_ACCEPT}}); err != nil {
		return fmt.Errorf("bgp: export policy: %w", err)
	}
	g.policies = true
	return nil
}

// pathOf is the route to p with this director as next hop (GoBGP puts
// its own address on the session for the unspecified one).
func pathOf(p netip.Prefix) (*apiutil.Path, error) {
	nlri, err := gbgp.NewIPAddrPrefix(p)
	if err != nil {
		return nil, err
	}
	attrs := []gbgp.PathAttributeInterface{gbgp.NewPathAttributeOrigin(gbgp.BGP_ORIGIN_ATTR_TYPE_IGP)}
	fam := gbgp.RF_IPv4_UC
	if p.Addr().Is4() {
		nh, err := gbgp.NewPathAttributeNextHop(netip.IPv4Unspecified())
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, nh)
	} else {
		fam = gbgp.RF_IPv6_UC
		mp, err := gbgp.NewPathAttributeMpReachNLRI(fam, []gbgp.PathNLRI{{NLRI: nlri}}, netip.IPv6Unspecified())
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, mp)
	}
	return &apiutil.Path{Family: fam, Nlri: nlri, Attrs: attrs}, nil
}

// Announce adds the route to p.
func (g *GoBGP) Announce(ctx context.Context, p netip.Prefix) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.s == nil {
		return errors.New("bgp: the speaker is not running")
	}
	if _, ok := g.paths[p]; ok {
		return nil
	}
	path, err := pathOf(p)
	if err != nil {
		return fmt.Errorf("bgp: announce %s: %w", p, err)
	}
	if _, err := g.s.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path}}); err != nil {
		return fmt.Errorf("bgp: announce %s: %w", p, err)
	}
	g.paths[p] = path
	return nil
}

// Withdraw deletes the route to p.
func (g *GoBGP) Withdraw(ctx context.Context, p netip.Prefix) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	path, ok := g.paths[p]
	if !ok || g.s == nil {
		return nil
	}
	if err := g.s.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{path}}); err != nil {
		return fmt.Errorf("bgp: withdraw %s: %w", p, err)
	}
	delete(g.paths, p)
	return nil
}

// Neighbors lists the neighbors' states.
func (g *GoBGP) Neighbors(ctx context.Context) ([]bgp.NeighborStatus, error) {
	g.mu.Lock()
	s := g.s
	withBFD := map[netip.Addr]bool{}
	for a, n := range g.neighbors {
		withBFD[a] = n.BFD != nil
	}
	g.mu.Unlock()
	if s == nil {
		return nil, nil
	}
	var out []bgp.NeighborStatus
	err := s.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
		ns := bgp.NeighborStatus{}
		if p.Conf != nil {
			ns.Addr, _ = netip.ParseAddr(p.Conf.NeighborAddress)
			ns.RemoteAS = p.Conf.PeerAsn
		}
		if st := p.State; st != nil {
			ns.State = bgp.SessionState(max(0, int(st.SessionState)-1))
			switch {
			case st.BfdState != nil && p.Bfd != nil && p.Bfd.Enabled:
				ns.BFD = bfdState(st.BfdState.SessionState)
			case withBFD[ns.Addr]:
				// Not running before the session is up (bfdFollow).
				ns.BFD = "down"
			}
		}
		if ns.State == bgp.Established && p.Timers != nil && p.Timers.State != nil && p.Timers.State.Uptime != nil {
			ns.Since = p.Timers.State.Uptime.AsTime()
		}
		for _, af := range p.AfiSafis {
			if af.State != nil {
				ns.Sent += af.State.Advertised
			}
		}
		out = append(out, ns)
	})
	return out, err
}

func bfdState(s api.BfdSessionState) string {
	switch s {
	case api.BfdSessionState_BFD_SESSION_STATE_UP:
		return "up"
	case api.BfdSessionState_BFD_SESSION_STATE_INIT:
		return "init"
	case api.BfdSessionState_BFD_SESSION_STATE_ADMIN_DOWN:
		return "admin-down"
	}
	return "down"
}

// Stop closes the sessions and stops the server.
func (g *GoBGP) Stop(context.Context) error {
	g.mu.Lock()
	s, stopWatch, stopBFD, bfdDone := g.s, g.stopWatch, g.stopBFD, g.bfdDone
	g.s, g.stopWatch, g.stopBFD, g.bfdDone = nil, nil, nil, nil
	g.bfdOn = map[netip.Addr]bool{}
	g.paths = map[netip.Prefix]*apiutil.Path{}
	g.neighbors = map[netip.Addr]*config.Neighbor{}
	g.policies = false
	g.mu.Unlock()
	if s == nil {
		return nil
	}
	close(stopBFD)
	<-bfdDone
	// Stop closes each session with a Cease and stops BFD; it logs its
	// own failure. StopBgp before it would make it log "failed to stop
	// BGP server: not running" at every stop.
	s.Stop()
	stopWatch()
	g.estMu.Lock()
	clear(g.established)
	g.estMu.Unlock()
	return nil
}
