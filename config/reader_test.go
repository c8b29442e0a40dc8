package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// readLines runs the reader on an in-memory file system and renders each
// logical line as "file:line: word|word|...".
func readLines(t *testing.T, files MapFS, id string) (string, Diagnostics) {
	t.Helper()
	rep := &reporter{}
	r := newReader(files, id, rep, defaultLimits)
	var b strings.Builder
	r.emit = func(pos Pos, toks []token) {
		b.WriteString(pos.String())
		b.WriteString(":")
		for _, tk := range toks {
			b.WriteString(" ")
			b.WriteString(tk.text)
		}
		b.WriteString("\n")
	}
	r.readFile("/etc/k/main.conf", Pos{}, true)
	return b.String(), rep.diags
}

func TestReader(t *testing.T) {
	tests := []struct {
		name  string
		files MapFS
		id    string
		want  string
		diags string // each diagnostic's String(), one per line
	}{
		{
			name:  "comments",
			files: MapFS{"/etc/k/main.conf": "# whole line\n! bang line\nrouter_id a # trailing\nrouter_id b! bang\n  \n"},
			want:  "/etc/k/main.conf:3: router_id a\n/etc/k/main.conf:4: router_id b\n",
		},
		{
			name:  "quotes keep comment characters and blanks",
			files: MapFS{"/etc/k/main.conf": `notify "/bin/n.sh a#b !c" 'x y'` + "\n" + `auth_pass ab"c d"e` + "\n"},
			want:  "/etc/k/main.conf:1: notify /bin/n.sh a#b !c x y\n/etc/k/main.conf:2: auth_pass abc de\n",
		},
		{
			name:  "escapes in quotes",
			files: MapFS{"/etc/k/main.conf": `s "a\"b\\c\x41\101\tz"` + "\n"},
			want:  "/etc/k/main.conf:1: s a\"b\\cAA\tz\n",
		},
		{
			name:  "continuation",
			files: MapFS{"/etc/k/main.conf": "virtual_server 10.0.0.1 \\\n  80 {\n}\n"},
			want:  "/etc/k/main.conf:1: virtual_server 10.0.0.1 80 {\n/etc/k/main.conf:3: }\n",
		},
		{
			name:  "braces are words",
			files: MapFS{"/etc/k/main.conf": "virtual_ipaddress {10.0.0.1}\nrs 1.2.3.4 80{weight 2}\n"},
			want:  "/etc/k/main.conf:1: virtual_ipaddress { 10.0.0.1 }\n/etc/k/main.conf:2: rs 1.2.3.4 80 { weight 2 }\n",
		},
		{
			name:  "unterminated quote",
			files: MapFS{"/etc/k/main.conf": "a \"b\nc\n"},
			want:  "/etc/k/main.conf:2: c\n",
			diags: "/etc/k/main.conf:1: error: unterminated quote",
		},
		{
			name: "include relative, glob, nested, braces",
			files: MapFS{
				"/etc/k/main.conf":     "include conf.d/*.conf\ninclude sub/{x,y}.conf\nlast\n",
				"/etc/k/conf.d/b.conf": "b\n",
				"/etc/k/conf.d/a.conf": "a\ninclude ../sub/x.conf\n",
				"/etc/k/sub/x.conf":    "x ${_PWD}\n",
				"/etc/k/sub/y.conf":    "y\n",
			},
			want: "/etc/k/conf.d/a.conf:1: a\n/etc/k/sub/x.conf:1: x /etc/k/sub\n/etc/k/conf.d/b.conf:1: b\n" +
				"/etc/k/sub/x.conf:1: x /etc/k/sub\n/etc/k/sub/y.conf:1: y\n/etc/k/main.conf:3: last\n",
		},
		{
			name: "include cycle",
			files: MapFS{
				"/etc/k/main.conf": "include a.conf\n",
				"/etc/k/a.conf":    "a\ninclude main.conf\n",
			},
			want:  "/etc/k/a.conf:1: a\n",
			diags: "/etc/k/a.conf:2: error: include: include cycle: /etc/k/main.conf -> /etc/k/a.conf -> /etc/k/main.conf",
		},
		{
			name:  "include missing file and empty glob",
			files: MapFS{"/etc/k/main.conf": "include nope.conf\ninclude d/*.conf\nincludew d/*.conf\n"},
			diags: "/etc/k/main.conf:1: error: include: cannot read /etc/k/nope.conf: file does not exist\n" +
				"/etc/k/main.conf:2: warning: include: no file matches \"/etc/k/d/*.conf\"\n" +
				"/etc/k/main.conf:3: error: includew: no file matches \"/etc/k/d/*.conf\"",
		},
		{
			name:  "parameters",
			files: MapFS{"/etc/k/main.conf": "$A=10.0\n$B=${A}.1\nip ${B}/24 $A\nkeep $A/8 $UNDEF pa$$word\n$E=\ne [$E ]\n"},
			want:  "/etc/k/main.conf:3: ip 10.0.1/24 10.0\n/etc/k/main.conf:4: keep $A/8 $UNDEF pa$$word\n/etc/k/main.conf:6: e [ ]\n",
			diags: "/etc/k/main.conf:4: warning: $A is not replaced when '/' follows it; write ${A}",
		},
		{
			name:  "parameters are substituted at use",
			files: MapFS{"/etc/k/main.conf": "$BASE=10.2.${SUB}\n$SUB=0\n${BASE}.100/32\n$SUB=10\n${BASE}.100/32\n"},
			want:  "/etc/k/main.conf:3: 10.2.0.100/32\n/etc/k/main.conf:5: 10.2.10.100/32\n",
		},
		{
			name:  "undefined braced parameter is an error",
			files: MapFS{"/etc/k/main.conf": "x ${NOPE}\n"},
			diags: "/etc/k/main.conf:1: error: parameter ${NOPE} is not defined",
		},
		{
			name:  "self-referencing parameter",
			files: MapFS{"/etc/k/main.conf": "$A=${A}x\ny ${A}\nz\n"},
			want:  "/etc/k/main.conf:3: z\n",
			diags: "/etc/k/main.conf:2: error: parameter substitution does not end (a parameter defined in terms of itself?)",
		},
		{
			name: "multiline parameter with nested definitions and conditionals",
			files: MapFS{"/etc/k/main.conf": "$RS= \\\nreal_server 10.0.0.${N} 80 { \\\n@high weight 2 \\\n@^high weight 1 \\\n}\n" +
				"$N=1\n$RS\n$N=2\n$RS\n"},
			id: "high",
			// Each line of the value is reported where it was written.
			want: "/etc/k/main.conf:2: real_server 10.0.0.1 80 {\n/etc/k/main.conf:3: weight 2\n/etc/k/main.conf:5: }\n" +
				"/etc/k/main.conf:2: real_server 10.0.0.2 80 {\n/etc/k/main.conf:3: weight 2\n/etc/k/main.conf:5: }\n",
		},
		{
			name:  "conditional lines",
			files: MapFS{"/etc/k/main.conf": "@main a\n@backup b\n@^main c\n@^backup d\n$IF=@main\n$IF e\n"},
			id:    "main",
			want:  "/etc/k/main.conf:1: a\n/etc/k/main.conf:4: d\n/etc/k/main.conf:6: e\n",
		},
		{
			name:  "predefined parameters",
			files: MapFS{"/etc/k/main.conf": "a ${_INSTANCE} ${_HASH}x ${_BANG}y\n"},
			id:    "lb1",
			want:  "/etc/k/main.conf:1: a lb1 #x !y\n",
		},
		{
			name:  "SEQ forms",
			files: MapFS{"/etc/k/main.conf": "~SEQ(i, 3) a$i\n~SEQ(i, 5, 3) b$i\n~SEQ(i, 0, 5, 12) c$i\n~SEQx(h, 0x9, 1, 0xb) d${h}\n~SEQ(i,1,2) ~SEQ(j,1,2) e${i}${j}\n~SEQ(i,3,1,1) never\n"},
			want: "/etc/k/main.conf:1: a1\n/etc/k/main.conf:1: a2\n/etc/k/main.conf:1: a3\n" +
				"/etc/k/main.conf:2: b5\n/etc/k/main.conf:2: b4\n/etc/k/main.conf:2: b3\n" +
				"/etc/k/main.conf:3: c0\n/etc/k/main.conf:3: c5\n/etc/k/main.conf:3: c10\n" +
				"/etc/k/main.conf:4: d9\n/etc/k/main.conf:4: da\n/etc/k/main.conf:4: db\n" +
				"/etc/k/main.conf:5: e11\n/etc/k/main.conf:5: e12\n/etc/k/main.conf:5: e21\n/etc/k/main.conf:5: e22\n",
		},
		{
			name:  "LST",
			files: MapFS{"/etc/k/main.conf": "~LST(v, x, y) a$v\n~LST({p, q}, {1,2}, {3,4}) b${p}${q}\n"},
			want:  "/etc/k/main.conf:1: ax\n/etc/k/main.conf:1: ay\n/etc/k/main.conf:2: b12\n/etc/k/main.conf:2: b34\n",
		},
		{
			name:  "SEQ errors",
			files: MapFS{"/etc/k/main.conf": "~SEQ(i, 1, 0, 3) a\n~SEQ(1x, 3) b\n~SEQ(i, 3 c\n~SEQ(i, 0, 1, 99999999999) d\n"},
			diags: "/etc/k/main.conf:1: error: ~SEQ: step must not be 0\n" +
				"/etc/k/main.conf:2: error: ~SEQ: bad variable name \"1x\"\n" +
				"/etc/k/main.conf:3: error: ~SEQ: missing ) in \"~SEQ(i, 3 c\"\n" +
				"/etc/k/main.conf:4: error: ~SEQ: more than 1048576 values",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, diags := readLines(t, tt.files, tt.id)
			if got != tt.want {
				t.Errorf("lines:\ngot:\n%s\nwant:\n%s", got, tt.want)
			}
			if g := strings.TrimSpace(diags.String()); g != tt.diags {
				t.Errorf("diagnostics:\ngot:\n%s\nwant:\n%s", g, tt.diags)
			}
		})
	}
}

// TestReaderBoundsWork checks that inputs built to explode end in one error
// quickly, under the default limits a real configuration gets.
func TestReaderBoundsWork(t *testing.T) {
	tests := []struct {
		name, conf, want string
	}{
		{"doubling multiline parameter", "$M= \\\n$M \\\n$M\n$M\n",
			"parameters or ~SEQ/~LST nested deeper than 32"},
		{"doubling parameter", "$A=${A}${A}\nx ${A}\n",
			"parameter substitution does not end (a parameter defined in terms of itself?)"},
		{"nested sequences", "~SEQ(i,1,1000000) ~SEQ(j,1,1000000) x\n",
			"configuration expands to more than 1048576 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := &reporter{}
			r := newReader(MapFS{"/k.conf": tt.conf}, "", rep, defaultLimits)
			r.emit = func(Pos, []token) {}
			r.readFile("/k.conf", Pos{}, true)
			if len(rep.diags) != 1 || rep.diags[0].Message != tt.want {
				t.Fatalf("got %d diagnostics %v, want one: %s", len(rep.diags), rep.diags, tt.want)
			}
		})
	}
}

// TestReaderRefusesEndlessFiles: a device or a FIFO named by an include is
// refused before it is read.
func TestReaderRefusesEndlessFiles(t *testing.T) {
	dir := t.TempDir()
	main := dir + "/main.conf"
	if err := os.WriteFile(main, []byte("include /dev/zero\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := Load(main, Options{Hostname: "h"})
	want := main + ":1: error: include: cannot read /dev/zero: not a regular file"
	if got := strings.TrimSpace(diags.String()); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestReaderBoundsFanOut: files that include the next one several times
// over end in one error, quickly, under the default limits.
func TestReaderBoundsFanOut(t *testing.T) {
	files := MapFS{}
	for i := 0; i < 30; i++ {
		next := fmt.Sprintf("f%d.conf", i+1)
		files[fmt.Sprintf("/k/f%d.conf", i)] = strings.Repeat("include "+next+"\n", 4)
	}
	files["/k/f30.conf"] = ""
	start := time.Now()
	_, diags := Load("/k/f0.conf", Options{FS: files, Hostname: "h"})
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "more than 4096 files read") {
		t.Errorf("%d diagnostics: %q", len(diags), diags)
	}
	t.Logf("refused in %v", time.Since(start))
}

// TestReaderBoundsWords: a long line repeated by ~SEQ ends in one error
// before the tree holds millions of words.
func TestReaderBoundsWords(t *testing.T) {
	conf := "$X=vrrp_script s" + strings.Repeat(" a", 400000) + "\n~SEQ(i, 100000) $X\n"
	_, diags := Load("/k.conf", Options{FS: MapFS{"/k.conf": conf}, Hostname: "h"})
	if len(diags) != 1 || diags[0].Message != "configuration expands to more than 8388608 words" {
		t.Errorf("%d diagnostics: %q", len(diags), diags)
	}
}
