package config

// NotifyFIFO is notify_fifo, vrrp_notify_fifo or lvs_notify_fifo, with
// its _script: a FIFO that directord creates if missing and writes one
// line per event to, and a script that directord starts with the FIFO's
// path as its last argument, to read it.
type NotifyFIFO struct {
	Pos  Pos    `json:"pos"`
	Path string `json:"path"`
	// User and Group own a FIFO that directord creates (the keyword's
	// optional words); empty: the default script user, as keepalived.
	User   string  `json:"user,omitempty"`
	Group  string  `json:"group,omitempty"`
	Script *Script `json:"script,omitempty"`
}

// TrackFile is a track_file block (vrrp_track_file is keepalived's
// deprecated synonym): a file holding a number, watched with inotify.
type TrackFile struct {
	Pos    Pos    `json:"pos"`
	Name   string `json:"name"`
	Path   string `json:"file"`
	Weight int    `json:"weight"` // default 1
	// Reverse negates the value read.
	Reverse bool `json:"reverse,omitempty"`
	// Init is init_file: write InitValue to the file at start when it does
	// not exist, or always when InitOverwrite (not on a reload).
	Init          bool `json:"init_file,omitempty"`
	InitValue     int  `json:"init_value,omitempty"`
	InitOverwrite bool `json:"init_overwrite,omitempty"`
}

// TrackFileUse is one entry of an instance's or sync group's track_file
// block: the file's value times Weight (negated when Reverse) is added to
// the priority; with Weight 0 a nonzero value (zero, when Reverse) is a
// fault.
type TrackFileUse struct {
	Name    string `json:"name"`
	Weight  int    `json:"weight"`
	Reverse bool   `json:"reverse,omitempty"`
	set     bool   // weight given on the entry
	pos     Pos
}
