package logkeys

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's, from this package's folder.
const root = "../.."

// docKeys are the keys of docs/operations.md's table of log attributes.
func docKeys(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]bool{}
	in := false
	cell := regexp.MustCompile("`([a-z_0-9]+)`")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "### Log attributes"):
			in = true
		case in && strings.HasPrefix(line, "#"):
			in = false
		case in && strings.HasPrefix(line, "| `"):
			first := strings.Split(line, "|")[1]
			for _, m := range cell.FindAllStringSubmatch(first, -1) {
				keys[m[1]] = true
			}
		}
	}
	if len(keys) == 0 {
		t.Fatal("docs/operations.md has no table of log attributes (### Log attributes)")
	}
	return keys
}

// logMethods are the methods of *slog.Logger (and slog's functions) that
// take a message and then attributes, with the position of the message.
var logMethods = map[string]int{
	"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
	"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1,
	"Log": 2, "With": -1,
}

// attrFuncs are slog's Attr constructors, whose first argument is a key.
var attrFuncs = map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true,
	"Float64": true, "Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true}

// use is a key as a log call names it.
type use struct {
	key string
	pos token.Position
}

// scan finds the attribute keys of every log call of the files of dir,
// and what it cannot read.
func scan(t *testing.T, dir string) (uses []use, unreadable []token.Position) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		s := &scanner{fset: fset}
		ast.Inspect(f, s.visit)
		uses = append(uses, s.uses...)
		unreadable = append(unreadable, s.unreadable...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return uses, unreadable
}

type scanner struct {
	fset       *token.FileSet
	uses       []use
	unreadable []token.Position
}

func (s *scanner) visit(n ast.Node) bool {
	c, ok := n.(*ast.CallExpr)
	if !ok {
		return true
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return true
	}
	if isSlog(sel.X) && attrFuncs[sel.Sel.Name] {
		if len(c.Args) > 0 {
			s.key(c.Args[0])
		}
		return true
	}
	msg, ok := logMethods[sel.Sel.Name]
	if !ok || len(c.Args) <= msg {
		return true
	}
	if msg >= 0 && !isMessage(c.Args[msg]) {
		return true // another method of that name (http.Error, t.Error)
	}
	s.pairs(c.Args[msg+1:])
	return true
}

// isMessage tells whether e can be a log message: a string literal, a
// concatenation, a call (d.String()).
func isMessage(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.BinaryExpr, *ast.CallExpr:
		return true
	}
	return false
}

func isSlog(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "slog"
}

// key notes e, an attribute's key.
func (s *scanner) key(e ast.Expr) {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		k, _ := strconv.Unquote(b.Value)
		s.uses = append(s.uses, use{k, s.fset.Position(e.Pos())})
		return
	}
	s.unreadable = append(s.unreadable, s.fset.Position(e.Pos()))
}

// pairs reads a log call's arguments after its message: key and value
// pairs, slog.Attr values, a slice of them spread (append(attrs, ...)...,
// or a local []any{...}).
func (s *scanner) pairs(args []ast.Expr) {
	for i := 0; i < len(args); i++ {
		switch a := args[i].(type) {
		case *ast.BasicLit:
			s.key(a)
			i++ // its value
			continue
		case *ast.CallExpr:
			if sel, ok := a.Fun.(*ast.SelectorExpr); ok && isSlog(sel.X) {
				continue // an Attr: its key is read where the call is visited
			}
			if id, ok := a.Fun.(*ast.Ident); ok && id.Name == "append" && len(a.Args) > 0 {
				s.spread(a.Args[0])
				s.pairs(a.Args[1:])
				continue
			}
		case *ast.Ident:
			if i == len(args)-1 && s.spread(a) {
				continue
			}
		}
		s.unreadable = append(s.unreadable, s.fset.Position(args[i].Pos()))
		return
	}
}

// spread reads the pairs of a local slice declared as []any{...}.
func (s *scanner) spread(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	if !ok || id.Obj == nil {
		return false
	}
	as, ok := id.Obj.Decl.(*ast.AssignStmt)
	if !ok {
		return false
	}
	for i, l := range as.Lhs {
		if l, ok := l.(*ast.Ident); ok && l.Name == id.Name && i < len(as.Rhs) {
			if cl, ok := as.Rhs[i].(*ast.CompositeLit); ok {
				s.pairs(cl.Elts)
				return true
			}
		}
	}
	return false
}

// TestLogKeysAreDocumented: every attribute key of a log call is in the
// table of docs/operations.md, and every key of the table is used: one
// set of keys, which people who parse the logs can rely on.
func TestLogKeysAreDocumented(t *testing.T) {
	doc := docKeys(t)
	uses, unreadable := scan(t, root)
	for _, p := range unreadable {
		t.Errorf("%s: a log attribute whose key this test cannot read: write keys as string literals", p)
	}
	used := map[string]bool{}
	for _, u := range uses {
		used[u.key] = true
		if !doc[u.key] {
			t.Errorf("%s: log attribute %q is not in docs/operations.md's table of log attributes: use a key of it, or add one there", u.pos, u.key)
		}
	}
	for k := range doc {
		if !used[k] {
			t.Errorf("docs/operations.md lists log attribute %q, which no log call uses", k)
		}
	}
	if len(uses) < 100 {
		t.Errorf("found %d attributes: the scan misses the log calls", len(uses))
	}
}

// TestScanReadsEveryForm: the scanner reads the forms the code uses, and
// reports what it cannot read.
func TestScanReadsEveryForm(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import "log/slog"

func f(log *slog.Logger, err error, v []any) {
	log.Info("m", "a", 1, slog.String("b", "x"))
	log.With("c", 2).Warn("m " + "n")
	attrs := []any{"d", 3}
	log.Warn("m", append(attrs, "e", 4)...)
	log.Error("m", attrs...)
	log.Log(nil, slog.LevelInfo, "m", "f", err)
	k := "g"
	log.Info("m", k, 5)
	log.Info("m", v...)
}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	uses, unreadable := scan(t, dir)
	var keys []string
	for _, u := range uses {
		keys = append(keys, u.key)
	}
	slices.Sort(keys)
	if want := []string{"a", "b", "c", "d", "d", "e", "f"}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	var lines []int
	for _, p := range unreadable {
		lines = append(lines, p.Line)
	}
	if want := []int{13, 14}; !slices.Equal(lines, want) {
		t.Errorf("unreadable at lines %v, want %v (k, v...)", lines, want)
	}
}
