package config

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// decoder fills the model from the tree.
type decoder struct {
	rep *reporter
	cfg *Config
	// The model's virtual and real servers, and the lists of a virtual
	// server's real servers, come from slabs (see slab); vsReals are the
	// places left for the real servers of the virtual server being
	// decoded.
	virtualServers slab[VirtualServer]
	realServers    slab[RealServer]
	realServerList slab[*RealServer]
	vsReals        []RealServer
	// names holds the names declared per kind of block, valid or not, so
	// that a reference to a block that had its own error is not reported
	// again as a reference to nothing.
	names map[string]map[string]bool
	// rulePriority is the preference the next rule without one gets, per
	// family (IPv4, IPv6): keepalived counts down from 16384 in the file's
	// order, static_rules and virtual_rules alike.
	rulePriority [2]uint32
	// fs reads iproute2's rt_tables for table names; tables is what it
	// holds, read at the first name (rtTables).
	fs     FileSystem
	tables []rtName
	// procMisses are track_process entries naming no vrrp_track_process
	// defined before them (decode_trackproc.go).
	procMisses []procMiss
	// kinds holds one DifferenceKind per block and keyword, shared by
	// the file's uses of it.
	kinds map[[2]string]*DifferenceKind
	// checks shares the url and HTTP parts of checkers written alike
	// (intern.go).
	checks checkShare
}

func (d *decoder) differenceKind(block, keyword, how string) *DifferenceKind {
	k := [2]string{block, keyword}
	if x, ok := d.kinds[k]; ok {
		return x
	}
	if d.kinds == nil {
		d.kinds = map[[2]string]*DifferenceKind{}
	}
	x := &DifferenceKind{Block: block, Keyword: keyword, How: how}
	d.kinds[k] = x
	return x
}

func (d *decoder) declared(kind, name string) {
	if d.names == nil {
		d.names = map[string]map[string]bool{}
	}
	if d.names[kind] == nil {
		d.names[kind] = map[string]bool{}
	}
	d.names[kind][name] = true
}

func (d *decoder) isDeclared(kind, name string) bool { return d.names[kind][name] }

// block describes the keywords one kind of block accepts. T is the model
// value the block fills.
type block[T any] struct {
	name string
	keys map[string]func(d *decoder, n *Node, t *T)
	// unsupported names keepalived keywords directord does not implement,
	// with a short reason (or "").
	unsupported map[string]string
	// extension marks a block that keepalived does not read at all: every
	// keyword of it is a directord extension.
	extension bool
}

// differs tells whether c is a use that Differences speaks of.
func differs(block string, n, c *Node) bool {
	applies, ok := DifferenceApplies[block][c.Keyword]
	return !ok || applies(n, c)
}

func (b *block[T]) isExtension() bool { return b.extension }

// walk decodes the children of n into t. An unknown keyword, or one
// directord does not support, is reported once and skipped with everything
// inside its block.
func walk[T any](d *decoder, n *Node, b *block[T], t *T) {
	for _, c := range n.Children {
		if h, ok := b.keys[c.Keyword]; ok {
			if how, ok := Differences[b.name][c.Keyword]; ok && differs(b.name, n, c) {
				d.cfg.Differs = append(d.cfg.Differs, Difference{Pos: c.Pos, DifferenceKind: d.differenceKind(b.name, c.Keyword, how)})
			}
			h(d, c, t)
			continue
		}
		if why, ok := b.unsupported[c.Keyword]; ok {
			d.rep.unsupported(c.Pos, c.Keyword, why)
			continue
		}
		d.unknown(c, b.name, b.names(), b.name == topLevelName)
	}
}

func (b *block[T]) names() []string {
	out := make([]string, 0, len(b.keys)+len(b.unsupported))
	for k := range b.keys {
		out = append(out, k)
	}
	for k := range b.unsupported {
		out = append(out, k)
	}
	return out
}

// unknown reports a keyword that the block does not know: with the closest
// keyword it does know when that is near enough to be a typo, or with the
// block it belongs in when it belongs elsewhere.
//
// keepalived logs an unknown keyword and goes on, and so does directord
// (a warning; an error under --strict), but only where keepalived's reading
// of the rest is directord's: keepalived does not skip an unknown keyword's
// block. It reads the block's lines as keywords of the enclosing block, and
// the block's "}" ends the enclosing block early. At the top level that
// "}" is itself an unknown keyword and nothing is lost, unless a line of
// the block is a top-level keyword that keepalived would act on. Anywhere
// else the rest of the enclosing block is read one level up: keepalived
// runs a different configuration, and that stays an error.
func (d *decoder) unknown(n *Node, where string, known []string, top bool) {
	msg := "unknown keyword in " + where
	hint := ""
	if s := suggest(n.Keyword, known); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	} else if v := "vrrp_" + n.Keyword; top && n.Block && topNames()[v] {
		// "track_process NAME { ... }": the block is vrrp_track_process,
		// the name without vrrp_ is what instances write inside.
		hint = fmt.Sprintf("; did you mean %q?", v)
	} else if home := keywordHome(n.Keyword); home != "" && home != where {
		hint = fmt.Sprintf("; it belongs in %s", home)
	}
	switch {
	case n.Block && !top:
		d.rep.errorf(n.Pos, n.Keyword, "%s%s (keepalived would read its block's lines as keywords of %s, and its } would end %s early)", msg, hint, where, where)
	case n.Block && topLevelInside(n) != nil:
		c := topLevelInside(n)
		d.rep.errorf(n.Pos, n.Keyword, "%s%s (keepalived would read its block's lines as top-level keywords, and run %s at %s)", msg, hint, c.Keyword, c.Pos)
	default:
		d.rep.lenient(n.Pos, n.Keyword, "%s, ignored as keepalived does%s", msg, hint)
	}
}

// topLevelInside returns the first line inside n's block, at any depth,
// whose keyword keepalived would take for a top-level keyword when it reads
// an unknown top-level block line by line.
func topLevelInside(n *Node) *Node {
	for _, c := range n.Children {
		if topNames()[c.Keyword] {
			return c
		}
		if found := topLevelInside(c); found != nil {
			return found
		}
	}
	return nil
}

// suggest returns the candidate closest to word by edit distance, if it is
// close enough to be a typo of it.
func suggest(word string, candidates []string) string {
	best, bestDist := "", math.MaxInt
	sort.Strings(candidates)
	lw := strings.ToLower(word)
	for _, c := range candidates {
		if strings.ToLower(c) == lw {
			return c // a difference of case only
		}
		if dist := editDistance(lw, strings.ToLower(c)); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	limit := 2
	if len(word) >= 10 {
		limit = 3
	}
	if len(word) <= 3 {
		limit = 1
	}
	if bestDist <= limit {
		return best
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment), so a swap of two letters counts as one edit.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// ---- arguments ----

// want checks the number of arguments: fewer than lo is an error (the
// keyword is then ignored), more than hi (hi >= 0) a warning.
func (d *decoder) want(n *Node, lo, hi int) bool {
	if len(n.Args) < lo {
		if lo == 1 {
			d.rep.errorf(n.Pos, n.Keyword, "needs a value")
		} else {
			d.rep.errorf(n.Pos, n.Keyword, "needs %d values", lo)
		}
		return false
	}
	if hi >= 0 && len(n.Args) > hi {
		d.rep.warnf(n.Pos, n.Keyword, "unexpected %q ignored", strings.Join(n.Args[hi:], " "))
	}
	return true
}

// noBlock reports a block given to a keyword that takes none, and says
// whether there was none.
func (d *decoder) noBlock(n *Node) bool {
	if n.Block {
		d.rep.errorf(n.Pos, n.Keyword, "takes no block")
		return false
	}
	return true
}

// needBlock reports a keyword that needs a block but has none.
func (d *decoder) needBlock(n *Node) bool {
	if !n.Block {
		d.rep.errorf(n.Pos, n.Keyword, "needs a { block }")
		return false
	}
	return true
}

// str reads a keyword with one string argument.
func (d *decoder) str(n *Node) (string, bool) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return "", false
	}
	return n.Args[0], true
}

// flag reads a keyword that takes no argument, or an optional <BOOL>.
func (d *decoder) flag(n *Node) (bool, bool) {
	if !d.noBlock(n) {
		return false, false
	}
	if len(n.Args) == 0 {
		return true, true
	}
	d.want(n, 0, 1)
	b, ok := parseBool(n.Args[0])
	if !ok {
		d.rep.errorf(n.Pos, n.Keyword, "%q is not one of on|off|true|false|yes|no", n.Args[0])
	}
	return b, ok
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "on", "true", "yes":
		return true, true
	case "off", "false", "no":
		return false, true
	}
	return false, false
}

// intArg reads argument i as an integer in [lo, hi].
func (d *decoder) intArg(n *Node, i int, lo, hi int64) (int64, bool) {
	s := n.Args[i]
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		d.rep.errorf(n.Pos, n.Keyword, "%q is not an integer from %d to %d", s, lo, hi)
		return 0, false
	}
	return v, true
}

// integer reads a keyword with one integer argument in [lo, hi].
func (d *decoder) integer(n *Node, lo, hi int64) (int64, bool) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return 0, false
	}
	return d.intArg(n, 0, lo, hi)
}

// timerArg reads argument i as keepalived's <TIMER>: decimal seconds with
// microsecond resolution, in [lo, hi].
func (d *decoder) timerArg(n *Node, i int, lo, hi time.Duration) (time.Duration, bool) {
	s := n.Args[i]
	v, err := parseTimer(s)
	if err != nil || v < lo || v > hi {
		d.rep.errorf(n.Pos, n.Keyword, "%q is not a time in seconds from %s to %s", s, seconds(lo), seconds(hi))
		return 0, false
	}
	return v, true
}

// ignoredTimer reads a keyword with one <TIMER> argument in [lo, hi] whose
// bad value keepalived ignores, keeping the default: a bad value is lenient.
func (d *decoder) ignoredTimer(n *Node, lo, hi time.Duration) (time.Duration, bool) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return 0, false
	}
	v, err := parseTimer(n.Args[0])
	if err != nil || v < lo || v > hi {
		d.rep.lenient(n.Pos, n.Keyword, "%q is not a time in seconds from %s to %s: ignored, as keepalived does", n.Args[0], seconds(lo), seconds(hi))
		return 0, false
	}
	return v, true
}

// timer reads a keyword with one <TIMER> argument.
func (d *decoder) timer(n *Node, lo, hi time.Duration) (time.Duration, bool) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return 0, false
	}
	return d.timerArg(n, 0, lo, hi)
}

// parseTimer reads decimal seconds ("3", "0.5", "2.000001") exactly, to the
// microsecond, without going through floating point.
func parseTimer(s string) (time.Duration, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, fmt.Errorf("empty time")
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseUint(whole, 10, 32)
	if err != nil {
		return 0, err
	}
	if len(frac) > 6 {
		if strings.Trim(frac[6:], "0123456789") != "" {
			return 0, fmt.Errorf("bad time %q", s)
		}
		frac = frac[:6]
	}
	var us uint64
	if frac != "" {
		f, err := strconv.ParseUint(frac, 10, 32)
		if err != nil {
			return 0, err
		}
		us = f
		for i := len(frac); i < 6; i++ {
			us *= 10
		}
	}
	return time.Duration(w)*time.Second + time.Duration(us)*time.Microsecond, nil
}

// seconds prints a duration as keepalived's configuration writes it.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// addrArg reads argument i as an IP address.
func (d *decoder) addrArg(n *Node, i int) (netip.Addr, bool) {
	a, err := netip.ParseAddr(n.Args[i])
	if err != nil || a.Zone() != "" && !a.Is6() {
		d.rep.errorf(n.Pos, n.Keyword, "%q is not an IP address", n.Args[i])
		return netip.Addr{}, false
	}
	return a, true
}

// addr reads a keyword with one IP address argument.
func (d *decoder) addr(n *Node) (netip.Addr, bool) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return netip.Addr{}, false
	}
	return d.addrArg(n, 0)
}

// portArg reads argument i as a port 1-65535.
func (d *decoder) portArg(n *Node, i int) (uint16, bool) {
	v, ok := d.intArg(n, i, 1, 65535)
	return uint16(v), ok
}

// script reads "SCRIPT [user [group]]" (notify scripts, quorum_up, ...).
func (d *decoder) script(n *Node) *Script {
	if !d.noBlock(n) || !d.want(n, 1, 3) {
		return nil
	}
	s, err := splitCommand(n.Args[0])
	if err != nil {
		d.rep.errorf(n.Pos, n.Keyword, "%v", err)
		return nil
	}
	s.Pos = n.Pos
	if len(n.Args) > 1 {
		s.User = n.Args[1]
	}
	if len(n.Args) > 2 {
		s.Group = n.Args[2]
	}
	return s
}

// splitCommand splits a script's command line into words: blanks separate
// them and single or double quotes group them, as keepalived does.
func splitCommand(cmd string) (*Script, error) {
	toks, err := tokenizeWords(cmd)
	if err != nil {
		return nil, fmt.Errorf("command %q: %v", cmd, err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return &Script{Command: cmd, Args: toks}, nil
}

// markSet records that keyword was given, for defaults that depend on it.
func markSet(set *map[string]Pos, n *Node) {
	if *set == nil {
		*set = map[string]Pos{}
	}
	(*set)[n.Keyword] = n.Pos
}

// lines calls f for each line of a value block such as virtual_ipaddress,
// where every line is one entry and its first word the value.
func (d *decoder) lines(n *Node, f func(c *Node)) {
	if !d.needBlock(n) {
		return
	}
	for _, c := range n.Children {
		if c.Block {
			d.rep.errorf(c.Pos, c.Keyword, "unexpected block inside %s", n.Keyword)
			continue
		}
		f(c)
	}
}

// namedBlock is what keywordHome needs of a block table.
type namedBlock interface {
	blockName() string
	names() []string
}

func (b *block[T]) blockName() string { return b.name }

// homes maps each keyword to the first block (in allBlocks order) that
// accepts it.
// It is set in init because the block tables refer to it through walk.
var homes func() map[string]string

// topLevelName is the top level's name in messages.
const topLevelName = "the top level"

// topNames holds the top level's keywords; set in init, as homes.
var topNames func() map[string]bool

func init() {
	topNames = sync.OnceValue(func() map[string]bool {
		m := map[string]bool{}
		for _, k := range topBlock.names() {
			m[k] = true
		}
		return m
	})
	homes = sync.OnceValue(func() map[string]string {
		m := map[string]string{}
		for _, b := range allBlocks() {
			for _, k := range b.names() {
				if _, ok := m[k]; !ok {
					m[k] = b.blockName()
				}
			}
		}
		return m
	})
}

func keywordHome(kw string) string { return homes()[kw] }

// hasChild reports whether n holds keyword kw, valid or not: a keyword given
// with a bad value has been reported already and must not also be reported
// as missing.
func hasChild(n *Node, kw string) bool {
	for _, c := range n.Children {
		if c.Keyword == kw {
			return true
		}
	}
	return false
}

// boolKey is the handler of a keyword that takes no argument or an optional
// <BOOL>. set, if not nil, gives the block's record of the keywords given,
// for defaults that depend on whether one was.
func boolKey[T any](field func(*T) *bool, set func(*T) *map[string]Pos) func(*decoder, *Node, *T) {
	return func(d *decoder, n *Node, t *T) {
		if v, ok := d.flag(n); ok {
			*field(t) = v
			if set != nil {
				markSet(set(t), n)
			}
		}
	}
}

func globalSet(g *Global) *map[string]Pos      { return &g.set }
func instanceSet(in *Instance) *map[string]Pos { return &in.set }

// slab hands out pieces of arrays allocated a slabSize at a time. The
// objects a configuration keeps then lie together, not one by one among
// the parse's short-lived objects of their size classes, whose spans a
// collection leaves mostly empty but resident, more so at each reload:
// at 1,000 x 10 real servers, 3.78 MB of spans held 2.14 MB of model.
// A piece lives as long as its slab; every piece is of the same model.
type slab[T any] struct{ free []T }

// slabSize is a slab's length in objects: one allocation of some tens of
// kB, a span of its own.
const slabSize = 128

// take returns n zeroed objects, its length and capacity n.
func (s *slab[T]) take(n int) []T {
	if n > len(s.free) {
		s.free = make([]T, max(n, slabSize))
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}
