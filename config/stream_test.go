package config

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/directord/directord/internal/testconf"
)

// streamFS is a MapFS that is an Opener too: the reader streams its files
// as it streams the host's.
type streamFS struct{ MapFS }

func (s streamFS) Open(name string) (io.ReadCloser, int64, error) {
	b, err := s.MapFS.ReadFile(name)
	if err != nil {
		return nil, 0, err
	}
	return io.NopCloser(strings.NewReader(string(b))), int64(len(b)), nil
}

// ReadFile must not be called for a file the reader can stream.
func (s streamFS) ReadFile(name string) ([]byte, error) {
	if strings.HasSuffix(name, ".conf") {
		panic("ReadFile of " + name + ": not streamed")
	}
	return s.MapFS.ReadFile(name)
}

// TestStreamedRead: a file read as a stream (OSFileSystem, an Opener)
// loads to the same configuration and diagnostics as the same file read
// whole: lines continued with a backslash, multiline definitions, CRLF,
// a byte-order mark, no final newline, a line longer than the stream's
// buffer, includes, and the large benchmark file.
func TestStreamedRead(t *testing.T) {
	long := "# " + strings.Repeat("x", 3*streamBuffer/2) + "\n"
	cases := []struct{ name, text string }{
		{"large", testconf.Large(20, 5)},
		{"continued", "global_defs {\n    router_id \\\n  r1\n}\nvrrp_instance V {\n    interface eth0\n    virtual_router_id 1\n    priority 100\n    virtual_ipaddress {\n        192.0.2.1/24\n    }\n}\n"},
		{"multiline definition", "$ADDRS= \\\n192.0.2.1/24 \\\n192.0.2.2/24\nvrrp_instance V {\n    interface eth0\n    virtual_router_id 1\n    virtual_ipaddress {\n        $ADDRS\n    }\n}\n"},
		{"crlf, bom, no final newline", "\ufeffglobal_defs {\r\n    router_id r1\r\n}\r\nunknown_keyword"},
		{"bom before blank lines", "\ufeff\n\n   \nglobal_defs {\n}\n"},
		{"a line longer than the buffer", long + "global_defs {\n    router_id r1\n}\n" + long},
		{"a trailing backslash at the end", "global_defs {\n    router_id r1\n}\n\\"},
		{"include", "include /etc/k/*.inc\nglobal_defs {\n    router_id r1\n}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := MapFS{"/k.conf": c.text, "/etc/k/a.inc": "virtual_server 192.0.2.9 80 {\n    real_server 10.0.0.1 80 {\n    }\n}\n"}
			opts := Options{FS: fs, Hostname: "h"}
			whole, wd := Load("/k.conf", opts)
			opts.FS = streamFS{fs}
			streamed, sd := Load("/k.conf", opts)
			if got, want := diagText(sd), diagText(wd); got != want {
				t.Errorf("diagnostics streamed:\n%s\nwhole:\n%s", got, want)
			}
			if got, want := dumpText(t, streamed), dumpText(t, whole); got != want {
				t.Errorf("configuration streamed differs from whole:\n%s\n%s", got, want)
			}
		})
	}
}

// TestStreamedReadOS: the host's file system streams its files, and a
// file that is not a regular one is refused as ReadFile refuses it.
func TestStreamedReadOS(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "k.conf")
	if err := os.WriteFile(name, []byte("global_defs {\n    router_id r1\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fs FileSystem = OSFileSystem{}
	if _, ok := fs.(Opener); !ok {
		t.Fatal("OSFileSystem is not an Opener")
	}
	cfg, diags := Load(name, Options{Hostname: "h"})
	if diags.HasErrors() || cfg.Global.RouterID != "r1" {
		t.Errorf("router_id %q, diagnostics %v", cfg.Global.RouterID, diags)
	}
	_, diags = Load(dir, Options{Hostname: "h"})
	if got := diagText(diags); !strings.Contains(got, "cannot read configuration") || !strings.Contains(got, "not a regular file") {
		t.Errorf("a directory: %s", got)
	}
}

func diagText(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func dumpText(t *testing.T, c *Config) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
