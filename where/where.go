// Package where reads the filter of a recalculation (batchctl recalc
// --where) and compiles it to SQL whose every value is a bind parameter.
//
// The grammar, with keywords in any case:
//
//	expr   := term ("or" term)*
//	term   := factor ("and" factor)*
//	factor := "not" factor | "(" expr ")" | column op value
//	        | column ["not"] "in" "(" value ("," value)* ")"
//	        | column "is" ["not"] "null"
//	op     := = | != | <> | < | <= | > | >=
//	value  := 'text' | "text" | word
//
// A quote inside a quoted value is written twice. A word is a bare
// value up to a space, a quote, a parenthesis, a comma or an operator, so
// country=DE and amount>=500 is two comparisons; a value that is a
// keyword, or holds one of those characters, must be quoted.
//
// Columns come from an allow-list with their types; a value that does not
// read as its column's type is refused, naming it, and so is anything the
// parser cannot read, with its position. The package lives at the module's
// root, not under internal/, because a Go RecalcKind takes filters from
// users too and should read them with the same grammar.
package where

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is a column's type, which decides how its values are read and
// compared.
type Type string

// The column types.
const (
	Text    Type = "text"
	Number  Type = "number"
	Integer Type = "integer"
	Date    Type = "date"
	Boolean Type = "boolean"
)

// Column is a column a filter may name.
type Column struct {
	// Name is how the filter names it (matched in any case).
	Name string
	Type Type
	// SQL is the column as the compiled query refers to it. Defaults to
	// the quoted name.
	SQL string
}

// Error is a filter that cannot be read: the filter, the 1-based position
// of the problem (one past the end for the end), and what is wrong.
type Error struct {
	Text string
	Pos  int
	Msg  string
}

func (e *Error) Error() string {
	where := fmt.Sprintf("at position %d", e.Pos)
	if e.Pos > len(e.Text) {
		where = "at the end"
	}
	return fmt.Sprintf("where %q: %s %s", e.Text, e.Msg, where)
}

// Expr is a parsed filter, checked against its columns.
type Expr struct {
	root node
}

// node is one part of a filter.
type node interface {
	// write appends the filter's canonical text.
	write(b *strings.Builder, parent int)
	// sql appends the node's SQL, its values as parameters.
	sql(q *query)
}

// Precedences, for parentheses in the canonical text.
const (
	precOr = iota + 1
	precAnd
	precNot
)

type (
	orNode  struct{ items []node }
	andNode struct{ items []node }
	notNode struct{ x node }
	cmpNode struct {
		col Column
		op  string
		val value
	}
	inNode struct {
		col  Column
		not  bool
		vals []value
	}
	nullNode struct {
		col Column
		not bool
	}
)

// value is a filter's value, as written and as its column's type reads it.
type value struct {
	text string
	// arg is the bind parameter, per dialect family: the canonical text,
	// or an int64 for SQLite's integers and booleans.
	arg any
}

// Parse reads a filter over cols. An empty filter (only spaces) is a nil
// Expr, which keeps every row.
func Parse(text string, cols []Column) (*Expr, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	if len(toks) == 1 {
		return nil, nil
	}
	p := &parser{text: text, toks: toks, cols: cols}
	root, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "expected and, or or the end after %s (quote a value with spaces or keywords)", p.prevText())
	}
	return &Expr{root: root}, nil
}

// String is the filter in its canonical form: lower-case keywords, the
// columns as the allow-list spells them, quoted values and only the
// parentheses precedence needs. Parse reads it back as the same filter.
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	e.root.write(&b, 0)
	return b.String()
}

// Columns lists the allowed columns' names, for messages: "country,
// tier or amount".
func Columns(cols []Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// WithColumns is err, an error of Parse over cols, with the allowed
// columns added when it does not list them already (an unknown column's
// does): a user who mistyped a filter sees what it may name. A nil err
// stays nil.
func WithColumns(err error, cols []Column) error {
	if err == nil || strings.Contains(err.Error(), "(columns: ") {
		return err
	}
	return fmt.Errorf("%w (columns: %s)", err, Columns(cols))
}

type parser struct {
	text string
	toks []token
	i    int
	cols []Column
	// depth is how many ( and not the parser is inside.
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// prevText names the token before the current one, for "after ...".
func (p *parser) prevText() string {
	if p.i == 0 {
		return "the start"
	}
	return strconv.Quote(p.toks[p.i-1].text)
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &Error{Text: p.text, Pos: t.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) keyword(t token, kw string) bool {
	return t.kind == tWord && !t.quoted && strings.EqualFold(t.text, kw)
}

func (p *parser) expr() (node, error) {
	var items []node
	for {
		n, err := p.term()
		if err != nil {
			return nil, err
		}
		items = append(items, n)
		if !p.keyword(p.peek(), "or") {
			break
		}
		p.next()
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &orNode{items: items}, nil
}

func (p *parser) term() (node, error) {
	var items []node
	for {
		n, err := p.factor()
		if err != nil {
			return nil, err
		}
		items = append(items, n)
		if !p.keyword(p.peek(), "and") {
			break
		}
		p.next()
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &andNode{items: items}, nil
}

// maxDepth bounds nesting, so that a hostile filter of ten thousand
// parentheses cannot exhaust the stack.
const maxDepth = 100

func (p *parser) factor() (node, error) {
	t := p.peek()
	switch {
	case p.keyword(t, "not"), t.kind == tLParen:
		p.next()
		if p.depth++; p.depth > maxDepth {
			return nil, p.errAt(t, "nested more than %d deep", maxDepth)
		}
		defer func() { p.depth-- }()
	}
	switch {
	case p.keyword(t, "not"):
		x, err := p.factor()
		if err != nil {
			return nil, err
		}
		return &notNode{x: x}, nil
	case t.kind == tLParen:
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		if r := p.next(); r.kind != tRParen {
			return nil, p.errAt(r, "expected ) to close the ( at position %d", t.pos)
		}
		return x, nil
	}
	return p.predicate()
}

func (p *parser) column() (Column, error) {
	t := p.next()
	if t.kind != tWord || t.quoted || isKeyword(t.text) {
		what := "expected a column"
		if p.i > 1 || t.kind == tEOF {
			what += " after " + p.prevBefore(t)
		}
		return Column{}, p.errAt(t, "%s (columns: %s)", what, Columns(p.cols))
	}
	i := slices.IndexFunc(p.cols, func(c Column) bool { return strings.EqualFold(c.Name, t.text) })
	if i < 0 {
		return Column{}, p.errAt(t, "unknown column %q (columns: %s)", t.text, Columns(p.cols))
	}
	return p.cols[i], nil
}

// prevBefore names the token before t.
func (p *parser) prevBefore(t token) string {
	i := slices.IndexFunc(p.toks, func(x token) bool { return x.pos == t.pos && x.kind == t.kind })
	if i <= 0 {
		return "the start"
	}
	return strconv.Quote(p.toks[i-1].text)
}

func (p *parser) predicate() (node, error) {
	col, err := p.column()
	if err != nil {
		return nil, err
	}
	t := p.next()
	switch {
	case t.kind == tOp:
		return p.comparison(col, t)
	case p.keyword(t, "is"):
		not := false
		if p.keyword(p.peek(), "not") {
			p.next()
			not = true
		}
		if n := p.next(); !p.keyword(n, "null") {
			return nil, p.errAt(n, "expected null after %s", p.prevBefore(n))
		}
		return &nullNode{col: col, not: not}, nil
	case p.keyword(t, "not"), p.keyword(t, "in"):
		not := p.keyword(t, "not")
		if not {
			if n := p.next(); !p.keyword(n, "in") {
				return nil, p.errAt(n, "expected in after \"not\"")
			}
		}
		return p.in(col, not)
	}
	return nil, p.errAt(t, "expected an operator (= != <> < <= > >=), in or is after %q", col.Name)
}

func (p *parser) comparison(col Column, op token) (node, error) {
	o := op.text
	if o == "<>" {
		o = "!="
	}
	if (col.Type == Text || col.Type == Boolean) && o != "=" && o != "!=" {
		return nil, p.errAt(op, "%s is %s: it compares with = or != only", col.Name, col.Type)
	}
	v, err := p.value(col)
	if err != nil {
		return nil, err
	}
	return &cmpNode{col: col, op: o, val: v}, nil
}

func (p *parser) in(col Column, not bool) (node, error) {
	if t := p.next(); t.kind != tLParen {
		return nil, p.errAt(t, "expected ( after in")
	}
	var vals []value
	for {
		v, err := p.value(col)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
		t := p.next()
		if t.kind == tRParen {
			return &inNode{col: col, not: not, vals: vals}, nil
		}
		if t.kind != tComma {
			return nil, p.errAt(t, "expected , or ) in the list of in")
		}
	}
}

// value reads a value and checks it reads as col's type.
func (p *parser) value(col Column) (value, error) {
	t := p.next()
	if t.kind != tWord || (!t.quoted && isKeyword(t.text)) {
		hint := ""
		if p.keyword(t, "null") {
			hint = " (write is null or is not null)"
		} else if t.kind == tWord {
			hint = fmt.Sprintf(" (quote it if it is one: '%s')", t.text)
		}
		return value{}, p.errAt(t, "expected a value after %s%s", p.prevBefore(t), hint)
	}
	v, err := read(col.Type, t.text)
	if err != nil {
		return value{}, p.errAt(t, "%s is %s: %v", col.Name, article(col.Type), err)
	}
	return v, nil
}

func article(t Type) string {
	if t == Integer {
		return "an integer"
	}
	if t == Text {
		return "text"
	}
	return "a " + string(t)
}

var numberRE = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?$`)

// read checks a value against a type and returns its canonical text.
func read(typ Type, s string) (value, error) {
	switch typ {
	case Number:
		if !numberRE.MatchString(s) {
			return value{}, fmt.Errorf("%q is not a number", s)
		}
		return value{text: s}, nil
	case Integer:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return value{}, fmt.Errorf("%q is not an integer", s)
		}
		return value{text: strconv.FormatInt(n, 10), arg: n}, nil
	case Date:
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return value{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
		return value{text: d.Format("2006-01-02")}, nil
	case Boolean:
		switch strings.ToLower(s) {
		case "true", "t", "1", "yes":
			return value{text: "true", arg: int64(1)}, nil
		case "false", "f", "0", "no":
			return value{text: "false", arg: int64(0)}, nil
		}
		return value{}, fmt.Errorf("%q is not true or false", s)
	}
	return value{text: s}, nil
}

var keywords = []string{"and", "or", "not", "in", "is", "null"}

func isKeyword(s string) bool {
	return slices.ContainsFunc(keywords, func(k string) bool { return strings.EqualFold(k, s) })
}
