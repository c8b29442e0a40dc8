package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pos is where something stands in the configuration: a file and a 1-based
// line. A line continued with a trailing backslash reports its first line.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

func (p Pos) String() string {
	switch {
	case p.File == "":
		return fmt.Sprintf("line %d", p.Line)
	case p.Line == 0:
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// Severity says whether a diagnostic stops the configuration from running.
type Severity int

const (
	// Warning is reported but does not stop the configuration from loading:
	// a keyword directord ignores, or a value it adjusted as keepalived does.
	Warning Severity = iota
	// Error means the configuration must not run: directord -t fails and a
	// reload is refused.
	Error
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Diagnostic is one problem found in a configuration.
type Diagnostic struct {
	Pos      Pos      `json:"pos"`
	Severity Severity `json:"-"`
	// Keyword is the keyword the problem is about, or "" for a lexical fault.
	Keyword string `json:"keyword,omitempty"`
	Message string `json:"message"`
	// Unsupported marks a valid keepalived feature that directord does not
	// implement, so callers can count or list them apart from real faults.
	Unsupported bool `json:"unsupported,omitempty"`
	// Lenient marks a fault that keepalived 2.2.7 runs past (it ignores
	// the keyword, value or object, or adjusts it) and directord too: a
	// warning, or an error under Options.Strict.
	Lenient bool `json:"lenient,omitempty"`
}

func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	b.WriteString(d.Severity.String())
	b.WriteString(": ")
	if d.Keyword != "" {
		b.WriteString(d.Keyword)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// Diagnostics is the list of problems found while loading a configuration, in
// the order of the files and lines they concern.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an Error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Errors returns only the diagnostics of severity Error.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == Error {
			out = append(out, d)
		}
	}
	return out
}

// Err returns nil when there are no errors, or an error whose text lists
// every error, one per line.
func (ds Diagnostics) Err() error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &LoadError{Diagnostics: errs}
}

func (ds Diagnostics) String() string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// LoadError is returned by Diagnostics.Err; it holds the errors found.
type LoadError struct {
	Diagnostics Diagnostics
}

func (e *LoadError) Error() string {
	if len(e.Diagnostics) == 1 {
		return e.Diagnostics[0].String()
	}
	return fmt.Sprintf("%d configuration errors:\n%s", len(e.Diagnostics), strings.TrimRight(e.Diagnostics.String(), "\n"))
}

// sortStable orders diagnostics by the order in which their files were first
// read and then by line, keeping the order of diagnostics on one line.
func (ds Diagnostics) sortStable(fileOrder map[string]int) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.File != b.File {
			return fileOrder[a.File] < fileOrder[b.File]
		}
		return a.Line < b.Line
	})
}

// reporter collects diagnostics; the stages of loading share one. A
// diagnostic identical to one already reported (a line a ~SEQ or a
// parameter repeats) is kept once.
type reporter struct {
	diags Diagnostics
	seen  map[Diagnostic]bool
	// strict turns lenient faults into errors (--strict).
	strict bool
}

func (r *reporter) add(d Diagnostic) {
	if r.seen == nil {
		r.seen = map[Diagnostic]bool{}
	}
	if r.seen[d] {
		return
	}
	r.seen[d] = true
	r.diags = append(r.diags, d)
}

func (r *reporter) errorf(pos Pos, keyword, format string, args ...any) {
	r.add(Diagnostic{Pos: pos, Severity: Error, Keyword: keyword, Message: fmt.Sprintf(format, args...)})
}

func (r *reporter) warnf(pos Pos, keyword, format string, args ...any) {
	r.add(Diagnostic{Pos: pos, Severity: Warning, Keyword: keyword, Message: fmt.Sprintf(format, args...)})
}

// StrictSuffix ends the message of a lenient fault refused under strict.
const StrictSuffix = " (refused: --strict)"

// lenient reports a fault that keepalived runs past, ignoring or adjusting
// what the message names: a warning that says so, or under strict an error.
// The message says what is done ("ignored, as keepalived does").
func (r *reporter) lenient(pos Pos, keyword, format string, args ...any) {
	d := Diagnostic{Pos: pos, Severity: Warning, Keyword: keyword, Message: fmt.Sprintf(format, args...), Lenient: true}
	if r.strict {
		d.Severity = Error
		d.Message += StrictSuffix
	}
	r.add(d)
}

func (r *reporter) unsupported(pos Pos, keyword, detail string) {
	msg := "not supported by directord"
	if detail != "" {
		msg += " (" + detail + ")"
	}
	r.add(Diagnostic{Pos: pos, Severity: Warning, Keyword: keyword, Message: msg, Unsupported: true})
}
