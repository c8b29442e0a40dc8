package config

import (
	"os"
	"strings"
)

// Options tune Load.
type Options struct {
	// ConfigID selects @id conditional lines (keepalived's -i). Empty means
	// the host name up to its first dot.
	ConfigID string
	// Hostname is router_id's default; empty means os.Hostname.
	Hostname string
	// FS reads the files; nil means the host's.
	FS FileSystem
	// Strict refuses what keepalived 2.2.7 runs past (an unknown keyword,
	// a value out of range that it ignores, an unknown state it reads as
	// BACKUP, ...): those are errors instead of warnings.
	Strict bool

	limits *limits // tests and fuzzing shrink these
}

// DefaultConfigID is keepalived's default -i: the host name up to its
// first dot.
func DefaultConfigID(hostname string) string {
	id, _, _ := strings.Cut(hostname, ".")
	return id
}

// Load reads the configuration at path, with its includes, and resolves it.
// It always returns the diagnostics found, sorted by file and line; the
// Config must not be run when they hold an error (Diagnostics.HasErrors).
func Load(path string, opts Options) (*Config, Diagnostics) {
	if opts.FS == nil {
		opts.FS = OSFileSystem{}
	}
	if opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	if opts.ConfigID == "" {
		opts.ConfigID = DefaultConfigID(opts.Hostname)
	}
	lim := defaultLimits
	if opts.limits != nil {
		lim = *opts.limits
	}
	rep := &reporter{strict: opts.Strict}
	r := newReader(opts.FS, opts.ConfigID, rep, lim)
	tb := newTreeBuilder(rep)
	r.emit = tb.line
	// Each top-level block is decoded as soon as it is read, and its
	// nodes dropped: the tree of a large file is never held whole beside
	// its model. The decoder's diagnostics are kept apart, so that they
	// follow the reader's as when the whole tree was read first.
	cfg := &Config{Global: defaultGlobal(opts.Hostname)}
	drep := &reporter{strict: opts.Strict}
	d := &decoder{rep: drep, cfg: cfg, fs: opts.FS}
	top := &Node{Children: make([]*Node, 1)}
	tb.emit = func(n *Node) {
		top.Children[0] = n
		walk(d, top, topBlock, cfg)
		top.Children[0] = nil
	}
	r.readFile(path, Pos{}, true)
	tb.finish()

	for name, i := range r.fileOrder {
		_ = i
		cfg.Files = append(cfg.Files, name)
	}
	sortByOrder(cfg.Files, r.fileOrder)
	if r.full {
		// A limit cut the reading short: what was read is partial, and its
		// faults would only hide the one that matters.
		rep.diags.sortStable(r.fileOrder)
		return &Config{Global: defaultGlobal(opts.Hostname), Files: cfg.Files}, rep.diags
	}
	for _, x := range drep.diags {
		rep.add(x)
	}
	d.rep = rep
	d.resolve()
	d.validate()
	// Where each keyword was given served the diagnostics, now made: a
	// map for each virtual server is not kept with the model.
	for _, vs := range cfg.VirtualServers {
		vs.set = nil
	}
	rep.diags.sortStable(r.fileOrder)
	return cfg, rep.diags
}

// Parse loads a configuration held in memory under the name file; includes
// are read from files, which may be nil.
func Parse(file, text string, files MapFS, opts Options) (*Config, Diagnostics) {
	fs := MapFS{}
	for k, v := range files {
		fs[k] = v
	}
	fs[file] = text
	opts.FS = fs
	if opts.Hostname == "" {
		opts.Hostname = "localhost"
	}
	return Load(file, opts)
}

func sortByOrder(names []string, order map[string]int) {
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && order[names[j]] < order[names[j-1]]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}
