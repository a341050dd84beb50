package cmd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// history matches a comment that cites an issue or an item of one, or
// narrates what the code was before, instead of saying what it does.
var history = regexp.MustCompile(`(?i)\b(issue|item)s?\s+#?\d+|\bused to\b`)

// TestCommentsSayWhatIs checks every Go file of the module (testdata's
// modules aside): each doc comment names the declaration under it (a
// comment above the wrong declaration, or naming an identifier renamed
// since, fails), and no comment cites an issue number or narrates
// history.
func TestCommentsSayWhatIs(t *testing.T) {
	fset := token.NewFileSet()
	eachGoFile(t, fset, false, func(path string, f *ast.File) {
		for _, g := range f.Comments {
			for _, c := range g.List {
				if m := history.FindString(c.Text); m != "" {
					t.Errorf("%s: a comment cites %q: say what the code does and why", fset.Position(c.Pos()), m)
				}
			}
		}
		for _, d := range f.Decls {
			for _, n := range documented(d) {
				if !namesWord(n.doc.Text(), n.name) {
					t.Errorf("%s: the doc comment above %s does not name it", fset.Position(n.doc.Pos()), n.name)
				}
			}
		}
	})
}

// eachGoFile parses every Go file of the module (node_modules and hidden
// directories aside; testdata's modules only when withTestdata) and hands
// it to fn.
func eachGoFile(t *testing.T, fset *token.FileSet, withTestdata bool, fn func(path string, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" && !withTestdata) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		fn(path, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// docName is a declared name and the doc comment above it.
type docName struct {
	name string
	doc  *ast.CommentGroup
}

// documented lists the names of d that have a doc comment of their own:
// a function or method (init aside), or a type, var or const declared
// alone (the comments in a group speak of the group).
func documented(d ast.Decl) []docName {
	var out []docName
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Doc != nil && d.Name.Name != "init" {
			out = append(out, docName{d.Name.Name, d.Doc})
		}
	case *ast.GenDecl:
		if d.Lparen.IsValid() {
			break // a group's comments speak of the group
		}
		for _, s := range d.Specs {
			doc := d.Doc
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Doc != nil {
					doc = s.Doc
				}
				if doc != nil {
					out = append(out, docName{s.Name.Name, doc})
				}
			case *ast.ValueSpec:
				if s.Doc != nil {
					doc = s.Doc
				}
				if doc != nil && len(s.Names) == 1 && s.Names[0].Name != "_" {
					out = append(out, docName{s.Names[0].Name, doc})
				}
			}
		}
	}
	return out
}

// namesWord reports whether text holds name as a word of its own.
func namesWord(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		if (j == 0 || !isIdent(text[j-1])) && (end == len(text) || !isIdent(text[end])) {
			return true
		}
		i = j + 1
	}
}

func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// outsideNames are camel-case words the comments use for things outside
// this module: MCP and JSON-RPC members and types, the reference harness's
// and ECMAScript's names, other products' settings and formats, the names
// inside the npm owner libraries the probe tests run, a published
// vector's name, and units.
var outsideNames = strings.Fields(`
	CallToolResult CreateTaskResult ElicitResult InitializeRequest ToolAnnotations
	SSEServerTransport inputResponses inputSchema nextCursor protocolVersion
	readOnlyHint requestState resultType structuredContent
	JavaScript TypeScript toString localeCompare createHmac OrdinaryOwnPropertyKeys
	QuoteJSONString taskId toolName idempotencyKey
	PostgreSQL PgBouncer DateStyle IntervalStyle TimeZone OpenAI GenAI OpenSSH
	StrictModes OpenTelemetry AnyValue ExportTraceServiceRequest lowerCamelCase
	MurmurHash3 MinHash ClientHello HttpStatus sentAtMs macOS MaxInt pRes
	stringArray stringSlice dddE cS dupN
	buildIdempotencyResponse cacheTTLMS defaultIntentValidator enforceIdempotency
	extractIdempotencyKeyFromReq findByIdempotencyKey idempotencyService
	inMemoryDataAdapter inProgressStrategy isEnabled keyMaxLength onRequest
	provideMiddlewareFunction setIfNotExists
	simpleString
	KiB MiB GiB NaN`)

// commentWord is a word of a comment that may name an identifier.
var commentWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// escapeWord is a byte or code unit written as an escape (xD800, uXXXX).
var escapeWord = regexp.MustCompile(`^[xu][0-9A-FXa-f]+$`)

// TestCommentsNameWhatExists checks that every camel-case word of a
// comment (a lower-case letter followed by an upper-case one: keyOf,
// ReadMapped, EscapeControls) is an identifier of the module, the
// name of one of its tests or benchmarks, or one of outsideNames: a
// comment that names a function renamed or gone fails.
func TestCommentsNameWhatExists(t *testing.T) {
	fset := token.NewFileSet()
	idents := map[string]bool{}
	for _, w := range outsideNames {
		idents[w] = true
	}
	type use struct {
		pos  token.Pos
		word string
	}
	var uses []use
	eachGoFile(t, fset, true, func(path string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				idents[id.Name] = true
			}
			return true
		})
		if strings.Contains(filepath.ToSlash(path), "/testdata/") {
			return // testdata's modules lend their names, not their comments
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				for _, m := range commentWord.FindAllStringIndex(c.Text, -1) {
					w := c.Text[m[0]:m[1]]
					if m[0] > 0 && c.Text[m[0]-1] == '\\' || escapeWord.MatchString(w) || !camel(w) {
						continue
					}
					uses = append(uses, use{c.Pos(), w})
				}
			}
		}
	})
	for _, u := range uses {
		if !idents[u.word] && !idents["Test"+u.word] && !idents["Benchmark"+u.word] && !idents["Fuzz"+u.word] {
			t.Errorf("%s: a comment names %s, which is no identifier of the module: name what exists", fset.Position(u.pos), u.word)
		}
	}
}

// camel reports whether w has a lower-case letter followed by an
// upper-case one.
func camel(w string) bool {
	for i := 1; i < len(w); i++ {
		if 'a' <= w[i-1] && w[i-1] <= 'z' && 'A' <= w[i] && w[i] <= 'Z' {
			return true
		}
	}
	return false
}
