package config

import (
	"encoding/json"
	"testing"

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
