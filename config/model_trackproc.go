package config

import "time"

// TrackProcess is a vrrp_track_process block: the processes whose name
// (the kernel's 15-character comm, or with FullCommand the command line's
// first word, then its arguments with ParamMatch) is Process, counted;
// the block has quorum while Quorum..QuorumMax of them run.
type TrackProcess struct {
	Pos  Pos    `json:"pos"`
	Name string `json:"name"`
	// Process is the process keyword's first word: the comm, or with
	// FullCommand argv[0], compared whole.
	Process string `json:"process"`
	// Params are its other words: the arguments the command line must
	// have, compared as ParamMatch says.
	Params []string `json:"params,omitempty"`
	// ParamMatch is "" (arguments not compared), "exact", "initial" (the
	// last parameter may be the start of the argument) or "partial"
	// (more arguments may follow).
	ParamMatch string `json:"param_match,omitempty"`
	// FullCommand: the command line is matched rather than the comm;
	// given by full_command, param_match or parameters.
	FullCommand bool `json:"full_command,omitempty"`
	// Quorum is the fewest processes for quorum (default 1; 0 with
	// quorum_max 0), QuorumMax the most (nil: no limit).
	Quorum    int  `json:"quorum"`
	QuorumMax *int `json:"quorum_max,omitempty"`
	// Weight (default 0: a fault without quorum) and Reverse are the
	// default of the instances' entries.
	Weight  int  `json:"weight"`
	Reverse bool `json:"reverse,omitempty"`
	// TerminateDelay holds off the loss of quorum by the exit of a
	// process; ForkDelay its gain by a tracked process's fork. delay
	// sets both.
	TerminateDelay time.Duration `json:"terminate_delay,omitempty"`
	ForkDelay      time.Duration `json:"fork_delay,omitempty"`
}

// InQuorum says whether n running processes make quorum.
func (p *TrackProcess) InQuorum(n int) bool {
	return n >= p.Quorum && (p.QuorumMax == nil || n <= *p.QuorumMax)
}

// TrackProcessUse is one entry of an instance's or sync group's
// track_process block. Without quorum, a Weight 0 entry is a fault (with
// quorum, when Reverse); otherwise a positive Weight is added while the
// process has quorum, a negative one while it has not (the other way round
// when Reverse).
type TrackProcessUse struct {
	Name    string `json:"name"`
	Weight  int    `json:"weight"`
	Reverse bool   `json:"reverse,omitempty"`
	pos     Pos
}
