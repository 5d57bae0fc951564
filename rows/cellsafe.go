package rows

// SafeCell neutralises a cell against formula injection before it is written
// to a CSV or XLSX file that a spreadsheet program may open: a value that
// starts with = + - @, tab, carriage return, line feed or NUL gets a leading
// apostrophe, so the program shows it as text instead of evaluating it.
// Every writer applies it by default; a column can opt out when its values
// are known to be data (negative numbers, say).
func SafeCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r', '\n', 0:
		return "'" + s
	}
	return s
}

// UnquoteFormula removes the apostrophe SafeCell puts in front of a formula
// character, and only that one: a report written with SafeCell, fixed and
// uploaded again, must read as the values it was written from, while an
// apostrophe in front of anything else is the user's and is kept. Readers
// apply it unless told to keep the quote (ReadOptions.KeepFormulaQuote).
func UnquoteFormula(v string) string {
	if len(v) >= 2 && v[0] == '\'' && SafeCell(v[1:]) != v[1:] {
		return v[1:]
	}
	return v
}
