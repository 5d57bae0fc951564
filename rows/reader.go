package rows

// Record is one data row of a file as read, before binding.
type Record struct {
	// Row is the row number as a spreadsheet program shows it: the header is
	// row 1 and blank lines count, so a user can find the row in the file.
	Row int64 `json:"row"`
	// Line is the physical line where the record starts (differs from Row
	// when quoted cells span lines).
	Line int64 `json:"line"`
	// Values are the cells in header order. A ragged row keeps what it had.
	Values []string `json:"values"`
	// Errors are reading problems of this row (ragged, bad bytes). A row
	// with reading errors is stored as invalid; the file goes on.
	Errors []FieldError `json:"errors,omitempty"`
}

// Reader streams the records of one file. Next returns io.EOF after the last
// record; any other error is a *FileError that rejects the whole file.
type Reader interface {
	// Header returns the header row as the file spells it.
	Header() []string
	// Next returns the next non-empty record.
	Next() (Record, error)
	// SkippedEmpty returns how many empty rows were skipped so far.
	SkippedEmpty() int64
}
