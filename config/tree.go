package config

// Node is one keyword of the configuration with its arguments and, when it
// opens a block, the nodes inside.
type Node struct {
	Pos      Pos
	Keyword  string
	Args     []string
	Block    bool // a block was opened, even if empty
	Children []*Node
}

// maxDepth bounds block nesting; keepalived's deepest real block
// (virtual_server > real_server > SSL_GET > url) is four levels.
const maxDepth = 64

// treeBuilder groups logical lines into nodes. "{" may end the keyword's line
// or stand at the start of the next one; anything after a "{" or "}" on a line
// is read as if it began a new line, so "real_server 10.0.0.1 80 { weight 2 }"
// is one node with one child.
type treeBuilder struct {
	lines []line
	li    int     // next line
	toks  []token // what is left of the current line
	pos   Pos     // the current line's position
	rep   *reporter
}

func buildTree(lines []line, rep *reporter) []*Node {
	b := &treeBuilder{lines: lines, rep: rep}
	root := &Node{Block: true}
	b.block(root, 0)
	return root.Children
}

// next returns the rest of the current line, moving to the next line when the
// current one is used up; ok is false at the end of input.
func (b *treeBuilder) next() ([]token, bool) {
	for len(b.toks) == 0 {
		if b.li >= len(b.lines) {
			return nil, false
		}
		b.toks, b.pos = b.lines[b.li].toks, b.lines[b.li].pos
		b.li++
	}
	return b.toks, true
}

// block reads nodes into parent until its closing brace (or, for the root,
// the end of input).
func (b *treeBuilder) block(parent *Node, depth int) {
	for {
		toks, ok := b.next()
		if !ok {
			if depth > 0 {
				b.rep.errorf(parent.Pos, parent.Keyword, "block is never closed: missing }")
			}
			return
		}
		t, pos := toks[0], b.pos
		if !t.quoted && t.text == "}" {
			b.toks = toks[1:]
			if depth == 0 {
				b.rep.errorf(pos, "", "unexpected } with no block open")
				continue
			}
			return
		}
		if !t.quoted && t.text == "{" {
			// A block with no keyword: report it once and skip it whole.
			b.toks = toks[1:]
			b.rep.errorf(pos, "", "unexpected { with no keyword before it")
			b.skipBlock(depth + 1)
			continue
		}
		n := &Node{Pos: pos, Keyword: t.text}
		i := 1
		for i < len(toks) && (toks[i].quoted || (toks[i].text != "{" && toks[i].text != "}")) {
			i++
		}
		if i > 1 {
			n.Args = make([]string, i-1)
			for j := range n.Args {
				n.Args[j] = toks[j+1].text
			}
		}
		b.toks = toks[i:]
		parent.Children = append(parent.Children, n)
		opens := false
		if len(b.toks) > 0 {
			opens = b.toks[0].text == "{" && !b.toks[0].quoted
		} else if b.li < len(b.lines) {
			nl := b.lines[b.li].toks
			if len(nl) > 0 && nl[0].text == "{" && !nl[0].quoted {
				b.toks, b.pos = nl, b.lines[b.li].pos
				b.li++
				opens = true
			}
		}
		if opens {
			b.toks = b.toks[1:]
			n.Block = true
			if depth+1 >= maxDepth {
				b.rep.errorf(n.Pos, n.Keyword, "blocks nested deeper than %d", maxDepth)
				b.skipBlock(depth + 1)
				continue
			}
			b.block(n, depth+1)
		}
	}
}

// skipBlock consumes tokens up to the brace that closes a block already
// opened, keeping count of the blocks inside it.
func (b *treeBuilder) skipBlock(depth int) {
	open := 1
	for open > 0 {
		toks, ok := b.next()
		if !ok {
			return
		}
		t := toks[0]
		b.toks = toks[1:]
		if t.quoted {
			continue
		}
		switch t.text {
		case "{":
			open++
		case "}":
			open--
		}
	}
}
