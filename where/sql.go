package where

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rowfate/rowfate/batchtype"
)

type tokenKind int

const (
	tEOF tokenKind = iota
	tWord
	tOp
	tLParen
	tRParen
	tComma
)

type token struct {
	kind tokenKind
	text string
	// quoted: a quoted value, never a keyword or a column.
	quoted bool
	pos    int // 1-based byte offset
}

// lex splits a filter into tokens; a quote left open is the one error.
func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case r == '(':
			out = append(out, token{kind: tLParen, text: "(", pos: i + 1})
			i++
		case r == ')':
			out = append(out, token{kind: tRParen, text: ")", pos: i + 1})
			i++
		case r == ',':
			out = append(out, token{kind: tComma, text: ",", pos: i + 1})
			i++
		case r == '\'' || r == '"':
			text, n, ok := quoted(s[i:], byte(r))
			if !ok {
				return nil, &Error{Text: s, Pos: i + 1, Msg: fmt.Sprintf("the quote %c is never closed", r)}
			}
			out = append(out, token{kind: tWord, text: text, quoted: true, pos: i + 1})
			i += n
		case strings.ContainsRune("<>=!", r):
			op := operator(s[i:])
			if op == "" {
				return nil, &Error{Text: s, Pos: i + 1, Msg: fmt.Sprintf("unknown operator %q (operators: = != <> < <= > >=)", string(r))}
			}
			out = append(out, token{kind: tOp, text: op, pos: i + 1})
			i += len(op)
		default:
			j := i
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if unicode.IsSpace(r) || strings.ContainsRune("()',\"<>=!", r) {
					break
				}
				j += size
			}
			out = append(out, token{kind: tWord, text: s[i:j], pos: i + 1})
			i = j
		}
	}
	return append(out, token{kind: tEOF, text: "the end", pos: len(s) + 1}), nil
}

// quoted reads a quoted value at the start of s: its text, the bytes it
// takes, and whether it is closed. A doubled quote is one quote.
func quoted(s string, q byte) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}

func operator(s string) string {
	for _, op := range []string{"<=", ">=", "<>", "!=", "=", "<", ">"} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return ""
}

// quote writes a value as the canonical text quotes it.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (n *orNode) write(b *strings.Builder, parent int) {
	writeList(b, parent, precOr, " or ", n.items)
}

func (n *andNode) write(b *strings.Builder, parent int) {
	writeList(b, parent, precAnd, " and ", n.items)
}

func writeList(b *strings.Builder, parent, prec int, sep string, items []node) {
	if parent > prec {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	for i, x := range items {
		if i > 0 {
			b.WriteString(sep)
		}
		// An or inside an or (from parentheses) keeps them: the text
		// reads back as the same tree.
		x.write(b, prec+1)
	}
}

func (n *notNode) write(b *strings.Builder, _ int) {
	b.WriteString("not ")
	n.x.write(b, precNot)
}

func (n *cmpNode) write(b *strings.Builder, _ int) {
	fmt.Fprintf(b, "%s %s %s", n.col.Name, n.op, quote(n.val.text))
}

func (n *inNode) write(b *strings.Builder, _ int) {
	b.WriteString(n.col.Name)
	if n.not {
		b.WriteString(" not")
	}
	b.WriteString(" in (")
	for i, v := range n.vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(v.text))
	}
	b.WriteByte(')')
}

func (n *nullNode) write(b *strings.Builder, _ int) {
	b.WriteString(n.col.Name)
	if n.not {
		b.WriteString(" is not null")
	} else {
		b.WriteString(" is null")
	}
}

// query is SQL being built: the text and its parameters, numbered from
// a first one.
type query struct {
	b       strings.Builder
	dialect batchtype.Dialect
	first   int
	args    []any
}

// SQL compiles the filter for a dialect: a boolean SQL expression
// (parenthesised) whose values are all parameters $first, $first+1, ...,
// and those parameters. On PostgreSQL each parameter is text cast to its
// column's type; on SQLite integers and booleans are int64, and numbers
// (which a table may hold as text, exactly) compare as REAL. A nil Expr is
// "TRUE" with no parameters.
func (e *Expr) SQL(d batchtype.Dialect, first int) (string, []any) {
	if e == nil {
		return "TRUE", nil
	}
	q := &query{dialect: d, first: first}
	q.b.WriteByte('(')
	e.root.sql(q)
	q.b.WriteByte(')')
	return q.b.String(), q.args
}

// column is the SQL of a column, as compared.
func (q *query) column(c Column) string {
	s := c.SQL
	if s == "" {
		s = `"` + strings.ReplaceAll(c.Name, `"`, `""`) + `"`
	}
	if q.dialect == batchtype.SQLite && c.Type == Number {
		return "CAST(" + s + " AS REAL)"
	}
	return s
}

// param adds a value as the next parameter and returns its SQL.
func (q *query) param(c Column, v value) string {
	n := "$" + strconv.Itoa(q.first+len(q.args))
	if q.dialect == batchtype.SQLite {
		switch c.Type {
		case Integer, Boolean:
			q.args = append(q.args, v.arg)
			return n
		case Number:
			q.args = append(q.args, v.text)
			return "CAST(" + n + " AS REAL)"
		}
		q.args = append(q.args, v.text)
		return n
	}
	q.args = append(q.args, v.text)
	switch c.Type {
	case Number:
		return "CAST(" + n + " AS numeric)"
	case Integer:
		return "CAST(" + n + " AS bigint)"
	case Date:
		return "CAST(" + n + " AS date)"
	case Boolean:
		return "CAST(" + n + " AS boolean)"
	}
	return "CAST(" + n + " AS text)"
}

func (n *orNode) sql(q *query)  { sqlList(q, " OR ", n.items) }
func (n *andNode) sql(q *query) { sqlList(q, " AND ", n.items) }

func sqlList(q *query, sep string, items []node) {
	for i, x := range items {
		if i > 0 {
			q.b.WriteString(sep)
		}
		q.b.WriteByte('(')
		x.sql(q)
		q.b.WriteByte(')')
	}
}

func (n *notNode) sql(q *query) {
	q.b.WriteString("NOT (")
	n.x.sql(q)
	q.b.WriteByte(')')
}

func (n *cmpNode) sql(q *query) {
	op := n.op
	if op == "!=" {
		op = "<>"
	}
	q.b.WriteString(q.column(n.col) + " " + op + " " + q.param(n.col, n.val))
}

func (n *inNode) sql(q *query) {
	q.b.WriteString(q.column(n.col))
	if n.not {
		q.b.WriteString(" NOT")
	}
	q.b.WriteString(" IN (")
	for i, v := range n.vals {
		if i > 0 {
			q.b.WriteString(", ")
		}
		q.b.WriteString(q.param(n.col, v))
	}
	q.b.WriteByte(')')
}

func (n *nullNode) sql(q *query) {
	q.b.WriteString(q.column(n.col))
	if n.not {
		q.b.WriteString(" IS NOT NULL")
	} else {
		q.b.WriteString(" IS NULL")
	}
}
