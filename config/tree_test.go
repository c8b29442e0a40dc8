package config

import (
	"encoding/json"
	"strings"
	"testing"

	"unsafe"

	"github.com/directord/directord/internal/testconf"
)

// TestTreeEmitsEachTopLevelBlock: with emit, the builder hands over each
// top-level node once complete and keeps none, and the nodes are those it
// builds without emit (so Load decodes the same tree, a block at a time).
func TestTreeEmitsEachTopLevelBlock(t *testing.T) {
	text := testconf.Large(3, 2) + "\nvirtual_server 10.9.9.9 80\n{\n real_server 10.0.0.1 80 { weight 2 }\n}\nglobal_defs {\n router_id x\n"
	build := func(emit bool) ([]*Node, *treeBuilder) {
		rep := &reporter{}
		r := newReader(MapFS{"/k.conf": text}, "", rep, defaultLimits)
		tb := newTreeBuilder(rep)
		var got []*Node
		if emit {
			tb.emit = func(n *Node) {
				if len(tb.root.Children) != 0 {
					t.Errorf("%s emitted while the builder holds %d top-level nodes", n.Keyword, len(tb.root.Children))
				}
				got = append(got, n)
			}
		}
		r.emit = tb.line
		r.readFile("/k.conf", Pos{}, true)
		if rest := tb.finish(); !emit {
			got = rest
		} else if len(rest) != 0 {
			t.Errorf("finish returned %d nodes after emitting", len(rest))
		}
		return got, tb
	}
	whole, _ := build(false)
	streamed, _ := build(true)
	a, _ := json.Marshal(whole)
	b, _ := json.Marshal(streamed)
	if len(whole) < 5 || string(a) != string(b) {
		t.Errorf("emitted tree differs from the whole one (%d and %d top-level nodes)", len(streamed), len(whole))
	}
}

// TestTreeWordsAreCopies: a node's words share no memory with the file's
// text, so the model does not keep a large file's text alive, and a word
// that many lines repeat is one string.
func TestTreeWordsAreCopies(t *testing.T) {
	text := "a /healthz {\n b /healthz\n}\n"
	rep := &reporter{}
	r := newReader(MapFS{"/k.conf": text}, "", rep, defaultLimits)
	tb := newTreeBuilder(rep)
	r.emit = tb.line
	var data []byte
	r.fs = readHook{MapFS{"/k.conf": text}, &data}
	r.readFile("/k.conf", Pos{}, true)
	nodes := tb.finish()
	if len(nodes) != 1 || len(nodes[0].Children) != 1 {
		t.Fatalf("tree %v", nodes)
	}
	in := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
		return p >= start && p < start+uintptr(len(data))
	}
	a, b := nodes[0].Args[0], nodes[0].Children[0].Args[0]
	if in(a) || in(b) || in(nodes[0].Keyword) {
		t.Errorf("a word points into the file's text")
	}
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("the two /healthz are two strings")
	}
}

// readHook is a MapFS that keeps the bytes it returned.
type readHook struct {
	MapFS
	data *[]byte
}

func (h readHook) ReadFile(name string) ([]byte, error) {
	b, err := h.MapFS.ReadFile(name)
	*h.data = b
	return b, err
}

// TestReadSized: a file is read whole, into one buffer of its size when
// the size is right, and whole all the same when it is not.
func TestReadSized(t *testing.T) {
	text := strings.Repeat("virtual_server 10.0.0.1 80 {\n}\n", 5000)
	for _, size := range []int64{int64(len(text)), 0, 10, int64(len(text)) * 2} {
		b, err := readSized(strings.NewReader(text), size)
		if err != nil || string(b) != text {
			t.Errorf("size %d: read %d bytes, %v; want %d", size, len(b), err, len(text))
		}
	}
	// One allocation for the reader, one for the buffer: no regrowth.
	allocs := testing.AllocsPerRun(10, func() { _, _ = readSized(strings.NewReader(text), int64(len(text))) })
	if allocs != 2 {
		t.Errorf("%v allocations for a file of the size given, want 2 (the reader and one buffer)", allocs)
	}
}
