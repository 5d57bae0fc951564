package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWireOwnedByFrontEnds: the engine's exported types (batch, batchtype)
// carry no JSON tags. The API's and the CLI's JSON are the promises of
// server and batchctl, each written by its own wire shapes; a tag on an
// engine type would make a rename in the engine a change every client
// sees. Unexported types may carry tags: they are the engine's own stored
// encodings (an export's checkpoint, a review's history detail), not a
// wire.
func TestWireOwnedByFrontEnds(t *testing.T) {
	t.Parallel()
	n := 0
	for _, dir := range []string{"../../batch", "../../batchtype"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			n++
			ast.Inspect(f, func(node ast.Node) bool {
				ts, ok := node.(*ast.TypeSpec)
				if !ok || !ts.Name.IsExported() {
					// Unexported types, with everything declared in
					// them, are no one's wire.
					_, isFunc := node.(*ast.FuncDecl)
					return !ok && !isFunc
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				for _, field := range st.Fields.List {
					if field.Tag == nil {
						continue
					}
					tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`"))
					if _, has := tag.Lookup("json"); has {
						t.Errorf("%s: %s has a json tag: the JSON belongs to the front end's wire shape (server/wire.go, batchctl/wire.go)",
							fset.Position(field.Pos()), ts.Name.Name)
					}
				}
				return false
			})
		}
	}
	if n < 10 {
		t.Fatalf("read %d files of batch and batchtype, want more: is the path right?", n)
	}
}
