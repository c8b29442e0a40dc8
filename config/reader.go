package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
)

// byteOrderMark is U+FEFF in UTF-8.
const byteOrderMark = "\ufeff"

// token is one word of a logical line.
type token struct {
	text string
	// quoted is set when any part of the word came from quotes: such a word
	// is never a brace.
	quoted bool
}

// limits bound what one configuration may make the reader do, so that a
// hostile or broken file (an include loop, a ~SEQ of a billion steps, a
// parameter that doubles itself) fails with a message instead of eating the
// machine.
type limits struct {
	includeDepth int // nested includes
	expandDepth  int // parameters and ~SEQ/~LST expanding inside each other
	lineBytes    int // one logical line, after substitution
	lines        int // logical lines in all, after expansion
	seqSteps     int // values one ~SEQ or ~LST may produce
	inputBytes   int // bytes read from all files
	fileReads    int // files read and include patterns matched, counting each include of a file again
	words        int // words in all, after expansion: what the tree keeps
	// expandBytes bounds the bytes that parameters, ~SEQ/~LST and include
	// braces produce in all, counting what was produced and then refused
	// (a line that substitutes a megabyte and fails on an undefined
	// parameter): without it a few kilobytes of definitions repeated by a
	// ~SEQ make gigabytes within every other limit.
	expandBytes int
}

var defaultLimits = limits{
	includeDepth: 32,
	expandDepth:  32,
	lineBytes:    1 << 20,
	lines:        1 << 20,
	seqSteps:     1 << 20,
	inputBytes:   512 << 20,
	fileReads:    4096,
	words:        8 << 20,
	expandBytes:  64 << 20,
}

// maxPattern is the longest include pattern taken (PATH_MAX): a brace
// expansion is never longer than its pattern, so one pattern makes at most
// maxPattern bytes per alternative.
const maxPattern = 4096

type reader struct {
	fs     FileSystem
	id     string
	rep    *reporter
	lim    limits
	params map[string]string
	// paramPos is where each parameter was defined, so that the lines of a
	// multiline parameter report their own lines.
	paramPos map[string]Pos
	rand     *rand.Rand

	// emit receives each logical line; the words are only valid during
	// the call.
	emit      func(pos Pos, toks []token)
	nlines    int
	toks      []token        // reused for each line's words
	stack     []string       // files being read, outermost first
	fileOrder map[string]int // files in the order first read
	readBytes int
	work      int      // lines processed, including those expansion produced
	reads     int      // files read
	words     int      // words produced
	expanded  int      // bytes expansion produced
	hints     []string // warnings about the line being substituted
	full      bool     // a limit was hit: stop producing lines
}

func newReader(fsys FileSystem, id string, rep *reporter, lim limits) *reader {
	return &reader{
		fs:        fsys,
		id:        id,
		rep:       rep,
		lim:       lim,
		params:    map[string]string{},
		paramPos:  map[string]Pos{},
		rand:      rand.New(rand.NewPCG(1, 2)),
		fileOrder: map[string]int{},
	}
}

// readFile reads one file (the top-level one, or an include) and processes
// its lines. from is the include line, or the zero Pos for the top file.
func (r *reader) readFile(name string, from Pos, strict bool) {
	if r.full {
		return
	}
	for i, open := range r.stack {
		if open == name {
			chain := append(append([]string{}, r.stack[i:]...), name)
			r.rep.errorf(from, "include", "include cycle: %s", strings.Join(chain, " -> "))
			return
		}
	}
	if len(r.stack) > r.lim.includeDepth {
		r.rep.errorf(from, "include", "includes nested deeper than %d files", r.lim.includeDepth)
		r.full = true
		return
	}
	r.reads++
	if r.reads > r.lim.fileReads {
		r.rep.errorf(from, "include", "more than %d files read in all (a file included again and again?)", r.lim.fileReads)
		r.full = true
		return
	}
	src, size, err := openLines(r.fs, name)
	if err != nil {
		switch {
		case from.File == "":
			r.rep.errorf(Pos{File: name}, "", "cannot read configuration: %v", unwrapPathError(err))
		case strict:
			r.rep.errorf(from, "include", "cannot read %s: %v", name, unwrapPathError(err))
		default:
			r.rep.warnf(from, "include", "cannot read %s: %v", name, unwrapPathError(err))
		}
		return
	}
	defer src.close()
	r.readBytes += size
	if r.readBytes > r.lim.inputBytes {
		r.rep.errorf(from, "include", "configuration larger than %d bytes in all", r.lim.inputBytes)
		r.full = true
		return
	}
	if _, seen := r.fileOrder[name]; !seen {
		r.fileOrder[name] = len(r.fileOrder)
	}
	r.stack = append(r.stack, name)
	oldPWD, hadPWD := r.params["_PWD"]
	r.params["_PWD"] = filepath.Dir(name)
	defer func() {
		r.stack = r.stack[:len(r.stack)-1]
		if hadPWD {
			r.params["_PWD"] = oldPWD
		} else {
			delete(r.params, "_PWD")
		}
	}()

	if src.bom() {
		// Editors on Windows write one; keepalived reads it as part of the
		// first word, which it then does not know, and skips that keyword.
		r.rep.lenient(Pos{File: name, Line: 1}, "", "the file starts with a UTF-8 byte-order mark: skipped (keepalived 2.2.7 reads it as part of the first word, %q, and ignores that as an unknown keyword)", src.firstWord())
	}
	lineNo := 0
	var parts []string
	for !r.full {
		// Gather the physical lines of one logical line: a line whose last
		// character is a backslash continues on the next one.
		phys, ok := src.next()
		if !ok {
			break
		}
		parts = parts[:0]
		size := 0
		start := lineNo + 1
		for {
			lineNo++
			phys = strings.TrimSuffix(phys, "\r")
			size += len(phys)
			if strings.HasSuffix(phys, `\`) && src.more() && size <= r.lim.lineBytes {
				parts = append(parts, phys[:len(phys)-1])
				phys, _ = src.next()
				continue
			}
			parts = append(parts, phys)
			break
		}
		pos := Pos{File: name, Line: start}
		if size > r.lim.lineBytes {
			r.rep.errorf(pos, "", "line longer than %d bytes", r.lim.lineBytes)
			continue
		}
		if len(parts) == 1 {
			r.process(parts[0], pos, 0)
			continue
		}
		// "$NAME= \" with nothing after the "=" starts a multiline
		// definition: each continued line is one line of the value. Any
		// other continued line is one logical line.
		sep := " "
		if isMultilineDefinition(parts[0]) {
			sep = "\n"
		}
		r.process(strings.Join(parts, sep), pos, 0)
	}
	if err := src.failed(name); err != nil {
		r.rep.errorf(Pos{File: name, Line: lineNo}, "", "cannot read configuration: %v", unwrapPathError(err))
	}
}

func isMultilineDefinition(first string) bool {
	s := strings.TrimLeft(first, " \t")
	if strings.HasPrefix(s, "@") {
		if i := strings.IndexAny(s, " \t"); i > 0 {
			s = strings.TrimLeft(s[i:], " \t")
		}
	}
	if !strings.HasPrefix(s, "$") {
		return false
	}
	_, value, ok := paramDefinition(s)
	return ok && value == ""
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

const blanks = " \t\v\f\r"

// process resolves one logical line: a conditional prefix, a comment, a
// parameter definition, ~SEQ/~LST, parameter uses and include, then keeps
// its words. A parameter whose value spans several lines expands into those
// lines, each processed in turn; depth counts such nested expansions.
func (r *reader) process(s string, pos Pos, depth int) {
	r.processLine(s, pos, depth, false)
}

// processLine is process; substituted marks a line that parameter
// substitution produced, whose comments were already removed (so that
// ${_HASH} and ${_BANG} stay literal).
func (r *reader) processLine(s string, pos Pos, depth int, substituted bool) {
	if r.full {
		return
	}
	if depth > 0 {
		r.work++
		if r.work > 2*r.lim.lines {
			r.rep.errorf(pos, "", "parameters or ~SEQ/~LST expand to more than %d lines", 2*r.lim.lines)
			r.full = true
			return
		}
		if !r.spend(len(s), pos) {
			return
		}
	}
	if depth > r.lim.expandDepth {
		r.rep.errorf(pos, "", "parameters or ~SEQ/~LST nested deeper than %d", r.lim.expandDepth)
		r.full = true
		return
	}
	s = strings.TrimLeft(s, blanks)
	if s == "" {
		return
	}
	// @id keeps the line only when -i selects id; @^id only when it does not.
	if s[0] == '@' {
		end := strings.IndexAny(s, blanks+"\n")
		if end < 0 {
			return // a condition with nothing after it
		}
		cond, rest := s[1:end], s[end:]
		want := true
		if strings.HasPrefix(cond, "^") {
			want, cond = false, cond[1:]
		}
		if (cond == r.id) != want {
			return
		}
		s = strings.TrimLeft(rest, blanks)
	}
	if !substituted {
		s = stripComments(s)
	}
	if strings.TrimSpace(s) == "" {
		return
	}
	if s[0] == '$' {
		if name, value, ok := paramDefinition(s); ok {
			r.params[name] = value
			r.paramPos[name] = pos
			return
		}
		// A line that is just a multiline parameter expands to its lines,
		// each reported at the line of the definition it came from.
		if name, ok := soleParam(s); ok {
			if v := r.params[name]; strings.Contains(v, "\n") {
				dp := r.paramPos[name]
				for i, l := range strings.Split(v, "\n") {
					r.processLine(l, Pos{File: dp.File, Line: dp.Line + i}, depth+1, true)
				}
				return
			}
		}
	}
	if strings.HasPrefix(s, "~SEQ") || strings.HasPrefix(s, "~LST") {
		r.repeat(s, pos, depth)
		return
	}
	expanded, ok := r.substitute(s, pos)
	if !ok {
		return
	}
	if expanded != s {
		// What a parameter brought may be a conditional, a definition,
		// several lines or a ~SEQ: read it again. Substitution has reached
		// its fixed point, so reading it again substitutes nothing more on
		// this line.
		for _, l := range strings.Split(expanded, "\n") {
			r.processLine(l, pos, depth+1, true)
		}
		return
	}
	if strings.Contains(s, "\n") {
		for _, l := range strings.Split(s, "\n") {
			r.processLine(l, pos, depth+1, true)
		}
		return
	}
	if kw, rest := firstWord(s); isIncludeKeyword(kw) {
		r.include(kw, rest, pos)
		return
	}
	toks, err := tokenizeInto(r.toks[:0], s, true)
	r.toks = toks
	if err != nil {
		r.rep.errorf(pos, "", "%v", err)
		return
	}
	if len(toks) == 0 {
		return
	}
	if r.nlines >= r.lim.lines {
		r.rep.errorf(pos, "", "configuration expands to more than %d lines", r.lim.lines)
		r.full = true
		return
	}
	r.words += len(toks)
	if r.words > r.lim.words {
		r.rep.errorf(pos, "", "configuration expands to more than %d words", r.lim.words)
		r.full = true
		return
	}
	r.nlines++
	r.emit(pos, toks)
}

// spend counts n bytes that expansion produced; past expandBytes in all it
// reports the limit once and stops the reading.
func (r *reader) spend(n int, pos Pos) bool {
	r.expanded += n
	if r.expanded > r.lim.expandBytes {
		r.rep.errorf(pos, "", "parameters, ~SEQ/~LST or include braces expand to more than %d bytes in all", r.lim.expandBytes)
		r.full = true
		return false
	}
	return true
}

func firstWord(s string) (word, rest string) {
	i := strings.IndexAny(s, blanks)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], blanks)
}

// isIncludeKeyword recognises include and keepalived's stricter variants:
// includer (unreadable file is an error), includem (no match), includew
// (wildcard with no match), includeb (brace with no match), includea (all).
func isIncludeKeyword(w string) bool {
	switch w {
	case "include", "includer", "includem", "includew", "includeb", "includea":
		return true
	}
	return false
}

// include reads the files that each pattern names. A pattern is relative to
// the including file's directory and may use glob characters and csh-style
// braces. A named file that cannot be read is an error: a director must not
// run without part of its configuration. A wildcard that matches nothing is
// a warning, as keepalived's plain include treats it, and an error for
// includew and includea.
func (r *reader) include(kw, rest string, pos Pos) {
	toks, err := tokenizeWords(rest)
	if err != nil {
		r.rep.errorf(pos, kw, "%v", err)
		return
	}
	if len(toks) == 0 {
		r.rep.errorf(pos, kw, "needs a file name or pattern")
		return
	}
	strictWildcard := kw == "includew" || kw == "includea"
	dir := filepath.Dir(pos.File)
	for _, raw := range toks {
		if r.full {
			return
		}
		if len(raw) > maxPattern {
			r.rep.errorf(pos, kw, "pattern %.40q... is longer than %d bytes", raw, maxPattern)
			continue
		}
		patterns, err := expandBraces(raw, 1024)
		if err != nil {
			r.rep.errorf(pos, kw, "pattern %q: %v", raw, err)
			continue
		}
		size := 0
		for _, p := range patterns {
			size += len(p)
		}
		if !r.spend(size, pos) {
			return
		}
		for _, pattern := range patterns {
			if r.full {
				return
			}
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(dir, pattern)
			}
			if !hasGlobMeta(pattern) {
				r.readFile(filepath.Clean(pattern), pos, true)
				continue
			}
			// A pattern costs a directory read, matched or not.
			r.reads++
			if r.reads > r.lim.fileReads {
				r.rep.errorf(pos, kw, "more than %d files read or patterns matched in all", r.lim.fileReads)
				r.full = true
				return
			}
			names, err := r.fs.Glob(pattern)
			if err != nil {
				r.rep.errorf(pos, kw, "bad pattern %q: %v", raw, err)
				continue
			}
			if len(names) == 0 {
				if strictWildcard {
					r.rep.errorf(pos, kw, "no file matches %q", pattern)
				} else {
					r.rep.warnf(pos, kw, "no file matches %q", pattern)
				}
				continue
			}
			for _, n := range names {
				r.readFile(filepath.Clean(n), pos, true)
			}
		}
	}
}

// expandBraces expands csh-style alternatives: "a{b,c}d" is "abd" and "acd";
// they nest. A brace with no comma is kept as it is.
func expandBraces(s string, max int) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth != 0 {
				continue
			}
			alts := splitTopLevel(s[open+1 : i])
			if len(alts) < 2 {
				// Not an alternative: keep the braces, expand what follows.
				tails, err := expandBraces(s[i+1:], max)
				if err != nil {
					return nil, err
				}
				var out []string
				for _, t := range tails {
					out = append(out, s[:i+1]+t)
				}
				return out, nil
			}
			var out []string
			for _, a := range alts {
				more, err := expandBraces(s[:open]+a+s[i+1:], max)
				if err != nil {
					return nil, err
				}
				out = append(out, more...)
				if len(out) > max {
					return nil, errors.New("too many alternatives")
				}
			}
			return out, nil
		}
	}
	return []string{s}, nil
}

func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// stripComments cuts each line of s at its first '#' or '!' outside quotes.
func stripComments(s string) string {
	if strings.IndexByte(s, '#') < 0 && strings.IndexByte(s, '!') < 0 {
		return strings.TrimRight(s, blanks)
	}
	var b strings.Builder
	var quote byte
	skipping := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			quote, skipping = 0, false
			b.WriteByte(c)
			continue
		}
		if skipping {
			continue
		}
		switch {
		case quote != 0:
			if c == '\\' && i+1 < len(s) && s[i+1] != '\n' {
				b.WriteByte(c)
				i++
				c = s[i]
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' || c == '!':
			skipping = true
			continue
		}
		b.WriteByte(c)
	}
	return strings.TrimRight(b.String(), blanks)
}

// soleParam recognises a line that is only "$NAME" or "${NAME}".
func soleParam(s string) (string, bool) {
	s = strings.TrimRight(s, blanks)
	if strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") {
		s = "$" + s[2:len(s)-1]
	}
	if len(s) < 2 || s[0] != '$' || !validName(s[1:]) {
		return "", false
	}
	return s[1:], true
}

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isNameChar(c byte) bool { return isNameStart(c) || (c >= '0' && c <= '9') }

// paramDefinition recognises "$NAME=value"; no blank may stand before the
// "=", and the value, possibly empty, is the rest of the line.
func paramDefinition(s string) (name, value string, ok bool) {
	if len(s) < 3 || s[0] != '$' || !isNameStart(s[1]) {
		return "", "", false
	}
	i := 2
	for i < len(s) && isNameChar(s[i]) {
		i++
	}
	if i >= len(s) || s[i] != '=' {
		return "", "", false
	}
	return s[1:i], strings.Trim(s[i+1:], blanks), true
}

// maxSubstitutions bounds the replacements on one line, and
// maxSubstitutionDepth how deeply values may refer to values, so that a
// parameter defined in terms of itself ends with an error.
const (
	maxSubstitutions     = 10000
	maxSubstitutionDepth = 32
)

// substitute replaces parameters as keepalived does: ${NAME} anywhere, and
// $NAME where a blank, ',', ')' or the end of the line follows it. A value is
// itself scanned for parameters (replacement is recursive and happens at use,
// not at definition), except a value of several lines, whose lines are
// processed one by one later. A name that is not defined is left as it is,
// so a "$" in a password or a script stays; but ${NAME} undefined is an
// error, since its braces would otherwise open or close a block.
func (r *reader) substitute(s string, pos Pos) (string, bool) {
	if strings.IndexByte(s, '$') < 0 {
		return s, true
	}
	var b strings.Builder
	count := 0
	r.hints = r.hints[:0]
	err := r.expandInto(&b, s, 0, &count)
	if !r.spend(b.Len(), pos) {
		return "", false
	}
	if err != "" {
		r.rep.errorf(pos, "", "%s", err)
		return "", false
	}
	for _, h := range r.hints {
		r.rep.warnf(pos, "", "%s", h)
	}
	return b.String(), true
}

// hint records a warning about the line being substituted, once.
func (r *reader) hint(h string) {
	for _, old := range r.hints {
		if old == h {
			return
		}
	}
	r.hints = append(r.hints, h)
}

// expandInto writes s with its parameters replaced into b; it returns an
// error message, or "".
func (r *reader) expandInto(b *strings.Builder, s string, depth int, count *int) string {
	if depth > maxSubstitutionDepth {
		return "parameter substitution does not end (a parameter defined in terms of itself?)"
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		var name string
		end := i + 1
		if s[i+1] == '{' {
			j := strings.IndexByte(s[i+2:], '}')
			if j < 0 {
				b.WriteByte(c)
				i++
				continue
			}
			name, end = s[i+2:i+2+j], i+3+j
		} else if isNameStart(s[i+1]) {
			for end < len(s) && isNameChar(s[end]) {
				end++
			}
			if end < len(s) && !isBlank(s[end]) && s[end] != '\n' && s[end] != ',' && s[end] != ')' {
				if _, defined := r.params[s[i+1:end]]; defined {
					r.hint(fmt.Sprintf("$%s is not replaced when %q follows it; write ${%s}", s[i+1:end], s[end], s[i+1:end]))
				}
				b.WriteByte(c)
				i++
				continue
			}
			name = s[i+1 : end]
		} else {
			b.WriteByte(c)
			i++
			continue
		}
		v, ok := r.lookup(name)
		if !ok {
			if s[i+1] == '{' {
				// Left in place its braces would open or close a block.
				return fmt.Sprintf("parameter ${%s} is not defined", name)
			}
			b.WriteString(s[i:end])
			i = end
			continue
		}
		*count++
		if *count > maxSubstitutions {
			return "parameter substitution does not end (a parameter defined in terms of itself?)"
		}
		if strings.Contains(v, "\n") {
			b.WriteString(v)
		} else if err := r.expandInto(b, v, depth+1, count); err != "" {
			return err
		}
		if b.Len() > r.lim.lineBytes {
			return fmt.Sprintf("line longer than %d bytes after substituting parameters", r.lim.lineBytes)
		}
		if r.expanded+b.Len() > r.lim.expandBytes {
			return "expansion limit" // substitute reports the limit instead
		}
		i = end
	}
	return ""
}

// lookup finds a parameter, including keepalived's predefined ones:
// ${_PWD}, ${_INSTANCE}, ${_HASH}, ${_BANG} and ${_RANDOM [MIN [MAX]]}.
func (r *reader) lookup(name string) (string, bool) {
	switch name {
	case "_INSTANCE":
		return r.id, true
	case "_HASH":
		return "#", true
	case "_BANG":
		return "!", true
	}
	if f := strings.Fields(name); len(f) > 0 && f[0] == "_RANDOM" && len(f) <= 3 {
		lo, hi := int64(0), int64(32767)
		var err error
		if len(f) > 1 {
			if lo, err = strconv.ParseInt(f[1], 10, 64); err != nil || lo < 0 {
				return "", false
			}
		}
		if len(f) > 2 {
			if hi, err = strconv.ParseInt(f[2], 10, 64); err != nil || hi < lo {
				return "", false
			}
		}
		if hi-lo == math.MaxInt64 { // hi-lo+1 would overflow
			return "", false
		}
		return strconv.FormatInt(lo+r.rand.Int64N(hi-lo+1), 10), true
	}
	v, ok := r.params[name]
	return v, ok
}

// repeat expands "~SEQ(var, start, step, end) rest", "~SEQx(...)" (values
// in hexadecimal) and "~LST(var, v1, v2, ...)" or "~LST({a, b}, {1, 2},
// {3, 4}) rest": rest is processed once per value with the variables set.
func (r *reader) repeat(s string, pos Pos, depth int) {
	kw := "~SEQ"
	hex := false
	switch {
	case strings.HasPrefix(s, "~SEQx("):
		kw, hex = "~SEQx", true
	case strings.HasPrefix(s, "~SEQ("):
	case strings.HasPrefix(s, "~LST("):
		kw = "~LST"
	default:
		r.rep.errorf(pos, "", "unknown directive %q", strings.SplitN(s, " ", 2)[0])
		return
	}
	closeAt := matchingParen(s, len(kw))
	if closeAt < 0 {
		r.rep.errorf(pos, kw, "missing ) in %q", s)
		return
	}
	argText, ok := r.substitute(s[len(kw)+1:closeAt], pos)
	if !ok {
		return
	}
	rest := s[closeAt+1:]
	var names []string
	var rows [][]string
	var err error
	if kw == "~LST" {
		names, rows, err = parseLST(argText, r.lim.seqSteps)
	} else {
		names, rows, err = parseSEQ(argText, hex, r.lim.seqSteps)
	}
	if err != nil {
		r.rep.errorf(pos, kw, "%v", err)
		return
	}
	saved := make(map[string]*string, len(names))
	for _, n := range names {
		if v, ok := r.params[n]; ok {
			saved[n] = &v
		} else {
			saved[n] = nil
		}
	}
	for _, row := range rows {
		if r.full {
			break
		}
		for i, n := range names {
			r.params[n] = row[i]
		}
		r.processLine(rest, pos, depth+1, true)
	}
	for n, v := range saved {
		if v == nil {
			delete(r.params, n)
		} else {
			r.params[n] = *v
		}
	}
}

func matchingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func validName(n string) bool {
	if n == "" || !isNameStart(n[0]) {
		return false
	}
	for i := 1; i < len(n); i++ {
		if !isNameChar(n[i]) {
			return false
		}
	}
	return true
}

// parseSEQ reads (var, end), (var, start, end) or (var, start, step, end).
// A missing step is 1 or -1 towards end; a missing start is 1, or -1 when
// end is negative.
func parseSEQ(args string, hex bool, max int) ([]string, [][]string, error) {
	f := strings.Split(args, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	if len(f) < 2 || len(f) > 4 {
		return nil, nil, errors.New("takes (var, end), (var, start, end) or (var, start, step, end)")
	}
	if !validName(f[0]) {
		return nil, nil, errors.New("bad variable name " + strconv.Quote(f[0]))
	}
	nums := make([]int64, 0, 3)
	for _, a := range f[1:] {
		n, err := strconv.ParseInt(a, 0, 64)
		if err != nil {
			return nil, nil, errors.New(strconv.Quote(a) + " is not an integer")
		}
		nums = append(nums, n)
	}
	var start, step, end int64
	switch len(nums) {
	case 1:
		end = nums[0]
		start = 1
		if end < 0 {
			start = -1
		}
	case 2:
		start, end = nums[0], nums[1]
	case 3:
		start, step, end = nums[0], nums[1], nums[2]
	}
	if len(nums) < 3 {
		step = 1
		if end < start {
			step = -1
		}
	}
	if step == 0 {
		return nil, nil, errors.New("step must not be 0")
	}
	if (step > 0 && start <= end) || (step < 0 && start >= end) {
		span, stride := new(big.Int).Sub(big.NewInt(end), big.NewInt(start)), big.NewInt(step)
		if n := new(big.Int).Quo(span, stride); n.Cmp(big.NewInt(int64(max))) >= 0 {
			return nil, nil, errors.New("more than " + strconv.Itoa(max) + " values")
		}
	}
	var rows [][]string
	for v := start; (step > 0 && v <= end) || (step < 0 && v >= end); v += step {
		if len(rows) >= max {
			return nil, nil, errors.New("more than " + strconv.Itoa(max) + " values")
		}
		if hex {
			rows = append(rows, []string{strconv.FormatInt(v, 16)})
		} else {
			rows = append(rows, []string{strconv.FormatInt(v, 10)})
		}
		if (step > 0 && v > end-step) || (step < 0 && v < end-step) {
			break // the next step would overflow or pass end
		}
	}
	return []string{f[0]}, rows, nil
}

// parseLST reads (var, v1, v2, ...) or ({a, b}, {1, 2}, {3, 4}, ...).
func parseLST(args string, max int) ([]string, [][]string, error) {
	items, err := splitLSTItems(args)
	if err != nil {
		return nil, nil, err
	}
	if len(items) < 2 {
		return nil, nil, errors.New("takes a variable and at least one value")
	}
	names := items[0]
	for _, n := range names {
		if !validName(n) {
			return nil, nil, errors.New("bad variable name " + strconv.Quote(n))
		}
	}
	if len(items)-1 > max {
		return nil, nil, errors.New("more than " + strconv.Itoa(max) + " values")
	}
	rows := items[1:]
	for _, row := range rows {
		if len(row) != len(names) {
			return nil, nil, errors.New("each value needs " + strconv.Itoa(len(names)) + " fields")
		}
	}
	return names, rows, nil
}

// splitLSTItems splits "a, {b, c}, d" into [[a] [b c] [d]].
func splitLSTItems(s string) ([][]string, error) {
	var out [][]string
	for _, item := range splitTopLevel(s) {
		item = strings.TrimSpace(item)
		if strings.HasPrefix(item, "{") {
			if !strings.HasSuffix(item, "}") {
				return nil, errors.New("unbalanced { in " + strconv.Quote(item))
			}
			var group []string
			for _, f := range strings.Split(item[1:len(item)-1], ",") {
				group = append(group, strings.TrimSpace(f))
			}
			out = append(out, group)
			continue
		}
		out = append(out, []string{item})
	}
	return out, nil
}

// tokenizeWords splits into words without treating braces specially, for
// include patterns with csh-style braces.
func tokenizeWords(s string) ([]string, error) {
	toks, err := tokenizeInto(nil, s, false)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.text
	}
	return out, nil
}

// tokenizeInto appends the words of s to toks. Braces outside quotes are words of their
// own. Quotes (double or single) group blanks into a word and are removed;
// inside them a backslash escapes as in the shell (\n, \t, \x41, \101, \\,
// \", ...). A quoted part joins the unquoted text next to it.
func tokenizeInto(toks []token, s string, braces bool) ([]token, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if isBlank(c) {
			i++
			continue
		}
		if braces && (c == '{' || c == '}') {
			toks = append(toks, token{text: s[i : i+1]})
			i++
			continue
		}
		// A word without quotes is a slice of the line, no copy.
		start := i
		for i < len(s) && !isBlank(s[i]) && !(braces && (s[i] == '{' || s[i] == '}')) && s[i] != '"' && s[i] != '\'' {
			i++
		}
		if i == len(s) || s[i] != '"' && s[i] != '\'' {
			toks = append(toks, token{text: s[start:i]})
			continue
		}
		i = start
		b.Reset()
		quoted := false
		for i < len(s) && !isBlank(s[i]) && !(braces && (s[i] == '{' || s[i] == '}')) {
			q := s[i]
			if q != '"' && q != '\'' {
				b.WriteByte(q)
				i++
				continue
			}
			quoted = true
			i++
			for {
				if i >= len(s) {
					return nil, errors.New("unterminated quote")
				}
				if s[i] == q {
					i++
					break
				}
				if s[i] == '\\' && i+1 < len(s) {
					i = unescape(s, i+1, &b)
					continue
				}
				b.WriteByte(s[i])
				i++
			}
		}
		toks = append(toks, token{text: b.String(), quoted: quoted})
	}
	return toks, nil
}

// unescape writes the character that the escape at s[i:] (just after the
// backslash) stands for, and returns the index after it.
func unescape(s string, i int, b *strings.Builder) int {
	c := s[i]
	simple := map[byte]byte{'a': '\a', 'b': '\b', 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}
	if v, ok := simple[c]; ok {
		b.WriteByte(v)
		return i + 1
	}
	switch {
	case c >= '0' && c <= '7':
		n, j := 0, i
		for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
			n = n*8 + int(s[j]-'0')
			j++
		}
		b.WriteByte(byte(n))
		return j
	case c == 'x':
		n, j := 0, i+1
		for j < len(s) && j < i+3 && isHex(s[j]) {
			n = n*16 + hexVal(s[j])
			j++
		}
		if j == i+1 {
			b.WriteByte('x')
			return j
		}
		b.WriteByte(byte(n))
		return j
	case c == 'c' && i+1 < len(s):
		b.WriteByte(s[i+1] & 0x1f)
		return i + 2
	}
	b.WriteByte(c)
	return i + 1
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'
}
