package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"
)

// FileSystem is what the reader needs of the files it reads. OSFileSystem
// is the real one; tests and fuzzing use MapFS.
type FileSystem interface {
	ReadFile(name string) ([]byte, error)
	// Glob returns the names matching pattern in lexical order, as
	// filepath.Glob does.
	Glob(pattern string) ([]string, error)
}

// OSFileSystem reads the host's files.
type OSFileSystem struct{}

// MaxFileSize is the largest configuration file OSFileSystem reads.
const MaxFileSize = 256 << 20

// ReadFile reads the named file. Only a regular file is read, and at most
// MaxFileSize bytes of it: a device, a FIFO or a directory named by mistake
// (include /dev/zero) is an error, not an endless read.
func (OSFileSystem) ReadFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	}
	if st.Size() > MaxFileSize {
		return nil, &os.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d bytes", MaxFileSize)}
	}
	b, err := readSized(io.LimitReader(f, MaxFileSize+1), st.Size())
	if err == nil && len(b) > MaxFileSize {
		err = &os.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d bytes", MaxFileSize)}
	}
	return b, err
}

// Opener is a FileSystem that can also hand a file to the reader to be
// read as it is processed, line by line, rather than whole: the reader
// then holds one line of a large file at a time, not all of its text
// until the last line is decoded (5.4 MB for 1,000 x 20 checked real
// servers, live at the load's peak). OSFileSystem is one.
type Opener interface {
	FileSystem
	// Open opens the named file for reading and returns its size; the
	// same checks as ReadFile's apply.
	Open(name string) (io.ReadCloser, int64, error)
}

// Open opens the named file as ReadFile reads it: only a regular file,
// and at most MaxFileSize bytes of it.
func (OSFileSystem) Open(name string) (io.ReadCloser, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case !st.Mode().IsRegular():
		err = &os.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	case st.Size() > MaxFileSize:
		err = &os.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d bytes", MaxFileSize)}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// lines hands out a file's physical lines, each without its "\n": from
// its whole text, or as they are read from a stream.
type lines struct {
	text string        // what is left of the text, without r
	r    *bufio.Reader // the stream, or nil
	c    io.Closer     // the stream's file
	n    int           // the bytes read from the stream
	err  error         // the stream's error, other than its end
}

// streamBuffer is the stream's buffer: lines longer than it are read all
// the same, in more than one read.
const streamBuffer = 64 << 10

// openLines opens the named file of fsys as lines, streamed if fsys is an
// Opener, and returns its size.
func openLines(fsys FileSystem, name string) (*lines, int, error) {
	if o, ok := fsys.(Opener); ok {
		rc, size, err := o.Open(name)
		if err != nil {
			return nil, 0, err
		}
		r := io.LimitReader(rc, MaxFileSize+1)
		return &lines{r: bufio.NewReaderSize(r, streamBuffer), c: rc}, int(size), nil
	}
	data, err := fsys.ReadFile(name)
	if err != nil {
		return nil, 0, err
	}
	// The bytes are never written again, so they need not be copied: the
	// words the tree keeps are copies (treeBuilder.word), and the text
	// goes once read.
	return &lines{text: unsafe.String(unsafe.SliceData(data), len(data))}, len(data), nil
}

// failed is the error that cut the stream short, if any: a read that
// failed, or a file grown past MaxFileSize since it was opened.
func (l *lines) failed(name string) error {
	switch {
	case l.err != nil:
		return &os.PathError{Op: "read", Path: name, Err: l.err}
	case l.n > MaxFileSize:
		return &os.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d bytes", MaxFileSize)}
	}
	return nil
}

// close closes the stream, if any.
func (l *lines) close() {
	if l.c != nil {
		l.c.Close()
	}
}

// bom tells whether the text starts with a UTF-8 byte-order mark, and
// skips it.
func (l *lines) bom() bool {
	if l.r == nil {
		rest, ok := strings.CutPrefix(l.text, byteOrderMark)
		l.text = rest
		return ok
	}
	if b, _ := l.r.Peek(len(byteOrderMark)); string(b) == byteOrderMark {
		l.r.Discard(len(b))
		return true
	}
	return false
}

// firstWord is the first word of what is left of the text, for the
// byte-order mark's diagnostic: from the stream's buffer, without
// reading past it.
func (l *lines) firstWord() string {
	text := l.text
	if l.r != nil {
		b, _ := l.r.Peek(streamBuffer)
		text = string(b)
	}
	first, _, _ := strings.Cut(strings.TrimLeft(text, " \t\r\n"), "\n")
	if f := strings.Fields(first); len(f) > 0 {
		first = f[0]
	}
	return first
}

// next is the next line; ok is false at the end.
func (l *lines) next() (line string, ok bool) {
	if l.r == nil {
		if len(l.text) == 0 {
			return "", false
		}
		if i := strings.IndexByte(l.text, '\n'); i >= 0 {
			line, l.text = l.text[:i], l.text[i+1:]
		} else {
			line, l.text = l.text, ""
		}
		return line, true
	}
	s, err := l.r.ReadString('\n')
	l.n += len(s)
	if err != nil && err != io.EOF {
		l.err = err
	}
	if err != nil && s == "" {
		return "", false
	}
	return strings.TrimSuffix(s, "\n"), true
}

// more tells whether a line follows.
func (l *lines) more() bool {
	if l.r == nil {
		return len(l.text) > 0
	}
	_, err := l.r.Peek(1)
	return err == nil
}

// readSized reads r to its end into a buffer of size (the file's size
// when stat'ed) and a little: io.ReadAll's doubling would allocate about
// twice a large file's size, all of it garbage at the load's peak. A file
// that grew since is read whole all the same.
func readSized(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, min(size, MaxFileSize)+512)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// Glob expands pattern with filepath.Glob.
func (OSFileSystem) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

// MapFS is an in-memory FileSystem keyed by cleaned slash paths, for tests
// and fuzzing.
type MapFS map[string]string

// ReadFile returns the named file's contents.
func (m MapFS) ReadFile(name string) ([]byte, error) {
	s, ok := m[filepath.Clean(name)]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return []byte(s), nil
}

// Glob matches pattern against the map's keys.
func (m MapFS) Glob(pattern string) ([]string, error) {
	pattern = filepath.Clean(pattern)
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	var out []string
	for name := range m {
		if ok, _ := filepath.Match(pattern, name); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, "*?[") }
