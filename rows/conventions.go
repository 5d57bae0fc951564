package rows

// Conventions are how one file writes what a cell alone cannot say: the
// number format, the order of day and month, what compact dates mean, and which file column feeds
// which of the kind's columns when their names differ. They are decided
// once per file (declared by the user, or settled by the file's own
// values) and kept with its batch, so that every later read of its rows
// (a worker binding them again, a re-run) reads them the same way.
type Conventions struct {
	// Number is the file's number format; the zero value is a decimal
	// point and no thousands separators.
	Number NumberFormat `json:"number,omitzero"`
	// DateOrder is the order of day and month in numeric dates; unknown
	// when neither declared nor settled by the file.
	DateOrder DateOrder `json:"date_order,omitempty"`
	// DateOrderRow is the row whose date settled DateOrder (it reads no
	// other way); 0 when the order was declared.
	DateOrderRow int64 `json:"date_order_row,omitempty"`
	// DateFormat is what the file's compact dates mean (070125 is
	// ddmmyy, or Excel serials): declared, never settled from the file;
	// undeclared, such a date is refused with the forms that would read
	// it. A batch stored before it existed reads as undeclared.
	DateFormat DateFormat `json:"date_format,omitempty"`
	// Renames map file columns onto the kind's columns (--map).
	Renames []Rename `json:"renames,omitempty"`
	// Ignore are columns of the file (as the header spells them) the user
	// says the kind does not read (--ignore): a column that looks like a
	// kind's column the file lacks is ignored, rather than stopping the
	// import, only when named here.
	Ignore []string `json:"ignore,omitempty"`
	// CommaColumns are columns (as the file spells them) in which some
	// values are written with a decimal comma although the file's number
	// format has a decimal point: a value there such as 12.500, a decimal
	// in one convention and a thousand in the other, is flagged rather
	// than read as 12.5.
	CommaColumns []string `json:"comma_columns,omitempty"`
}

// Rename maps a column of the file onto a column of the kind.
type Rename struct {
	// From is the file's column, as the header spells it (matched like
	// any header: case, spaces and Unicode form do not matter).
	From string `json:"from"`
	// To is the kind's column (its declared name or an alias).
	To string `json:"to"`
}
