package config

import "strings"

// Node is one keyword of the configuration with its arguments and, when it
// opens a block, the nodes inside.
type Node struct {
	Pos      Pos
	Keyword  string
	Args     []string
	Block    bool // a block was opened, even if empty
	Children []*Node
	// quoted tells, for each of Args, whether any of it was in quotes
	// (where a backslash escapes): keepalived's regex reads escapes
	// outside quotes too.
	quoted []bool
}

// maxDepth bounds block nesting; keepalived's deepest real block
// (virtual_server > real_server > SSL_GET > url) is four levels.
const maxDepth = 64

// treeBuilder groups logical lines into nodes as the reader produces them,
// so that no line is kept once read. "{" may end the keyword's line or stand
// at the start of the next one; anything after a "{" or "}" on a line is read
// as if it began a new line, so "real_server 10.0.0.1 80 { weight 2 }" is one
// node with one child.
type treeBuilder struct {
	rep   *reporter
	root  Node
	stack []*Node // open blocks, root first
	// pending is the node just read, which a "{" right after it (on its line
	// or first on the next) opens.
	pending *Node
	// skip counts the open blocks being skipped: one opened without a
	// keyword, or nested too deep.
	skip int
	// emit, when set, takes each top-level node once it is complete (the
	// next top-level keyword is read, or the input ends), which is then
	// no longer kept: a large file's tree is never held whole.
	emit func(*Node)
	// words holds one copy of each word put in a node of the top-level
	// block being read: the model keeps no substring of a file's text
	// (which would keep the whole text alive), and the words a block
	// repeats ("/healthz", "200") are one string.
	words map[string]string
}

// maxWords bounds the table of words between top-level blocks.
const maxWords = 2048

// word is s as one copy shared by every node that has it.
func (b *treeBuilder) word(s string) string {
	if w, ok := b.words[s]; ok {
		return w
	}
	if b.words == nil {
		b.words = map[string]string{}
	}
	w := strings.Clone(s)
	b.words[w] = w
	return w
}

func newTreeBuilder(rep *reporter) *treeBuilder {
	b := &treeBuilder{rep: rep}
	b.root.Block = true
	b.stack = []*Node{&b.root}
	return b
}

// line takes one logical line's words.
func (b *treeBuilder) line(pos Pos, toks []token) {
	// pending survives into this line only for a "{" that starts it.
	for i := 0; i < len(toks); {
		t := toks[i]
		brace := !t.quoted && (t.text == "{" || t.text == "}")
		if b.skip > 0 {
			if brace && t.text == "{" {
				b.skip++
			} else if brace {
				b.skip--
			}
			i++
			continue
		}
		switch {
		case brace && t.text == "{":
			n := b.pending
			b.pending = nil
			i++
			if n == nil {
				// A block with no keyword: report it once and skip it whole.
				b.rep.errorf(pos, "", "unexpected { with no keyword before it")
				b.skip = 1
				continue
			}
			n.Block = true
			if len(b.stack) > maxDepth {
				b.rep.errorf(n.Pos, n.Keyword, "blocks nested deeper than %d", maxDepth)
				b.skip = 1
				continue
			}
			b.stack = append(b.stack, n)
		case brace:
			b.pending = nil
			i++
			if len(b.stack) == 1 {
				b.rep.errorf(pos, "", "unexpected } with no block open")
				continue
			}
			b.stack = b.stack[:len(b.stack)-1]
		default:
			if len(b.stack) > 1 && topLevelBlocks[t.text] && !t.quoted {
				// A block that only stands at the top level, inside another:
				// the block open above lacks its "}". Say so once, there,
				// and go on at the top level rather than reading every
				// block that follows one level too deep.
				open := b.stack[len(b.stack)-1]
				b.rep.errorf(open.Pos, open.Keyword, "block is never closed: missing } before %s at %s", t.text, pos)
				b.stack = b.stack[:1]
			}
			j := i + 1
			for j < len(toks) && (toks[j].quoted || (toks[j].text != "{" && toks[j].text != "}")) {
				j++
			}
			n := &Node{Pos: pos, Keyword: b.word(t.text)}
			if j > i+1 {
				n.Args = make([]string, j-i-1)
				n.quoted = make([]bool, j-i-1)
				for k := range n.Args {
					n.Args[k] = b.word(toks[i+1+k].text)
					n.quoted[k] = toks[i+1+k].quoted
				}
			}
			top := b.stack[len(b.stack)-1]
			if top == &b.root && b.emit != nil && len(top.Children) > 0 {
				// Only blocks still open receive nodes: the previous
				// top-level node is complete.
				prev := top.Children[0]
				top.Children[0] = nil
				top.Children = top.Children[:0]
				b.emit(prev)
				// The table is bounded: 20,000 real servers' addresses
				// held 1.25 MB of it to the end of the read. Emptied
				// between blocks once it is large, not at each: the
				// short words every block repeats ("rr", "TCP") stay
				// one copy, not one per block scattered over the heap.
				if len(b.words) > maxWords {
					clear(b.words)
				}
			}
			top.Children = append(top.Children, n)
			b.pending = n
			i = j
		}
	}
}

// finish closes the input and returns the top-level nodes not emitted
// (all of them without emit). Blocks still open are reported once, at the
// innermost.
func (b *treeBuilder) finish() []*Node {
	if len(b.stack) > 1 {
		n := b.stack[len(b.stack)-1]
		b.rep.errorf(n.Pos, n.Keyword, "block is never closed: missing }")
	}
	if b.emit != nil {
		rest := b.root.Children
		b.root.Children = nil
		for _, n := range rest {
			b.emit(n)
		}
	}
	return b.root.Children
}

// topLevelBlocks are the blocks that only stand at the top level.
var topLevelBlocks = map[string]bool{
	"global_defs": true, "vrrp_script": true, "vrrp_sync_group": true, "vrrp_instance": true,
	"virtual_server_group": true, "virtual_server": true,
}
