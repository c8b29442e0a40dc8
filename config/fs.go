package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
