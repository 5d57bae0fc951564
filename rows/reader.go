package rows

import (
	"strings"
	"unicode/utf8"
)

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
	// Trimmed says the reader left empty the cells of the columns a
	// Projector was told to drop (see Projector): they held more than it
	// keeps.
	Trimmed bool `json:"trimmed,omitempty"`
}

// Unreadable reports whether the record is a line that could not be read
// as cells (CodeUnreadableLine): its one value is the line's raw text,
// which no column's rules apply to.
func (r Record) Unreadable() bool {
	for _, fe := range r.Errors {
		if fe.Code == CodeUnreadableLine {
			return true
		}
	}
	return false
}

// Reader streams the records of one file. Next returns io.EOF after the last
// record; any other error is a *FileError that rejects the whole file.
//
// Every format's reader implements it, so that the engine reads a file
// without knowing its format: what only one format has (a sheet, an
// encoding) is told by Info.
type Reader interface {
	// Header returns the header row as the file spells it.
	Header() []string
	// Next returns the next non-empty record.
	Next() (Record, error)
	// SkippedEmpty returns how many empty rows were skipped so far.
	SkippedEmpty() int64
	// Info describes the source as read: format, header row, encoding and
	// delimiter (text), sheets and the sheet read (workbooks).
	Info() SourceInfo
	// Close releases what the reader holds (temporary files); safe to call
	// more than once.
	Close() error
}

// A Projector is a Reader that can leave out of its records the cells
// nobody reads. After Project, a record whose cells in the columns keep
// refuses hold more than maxUnread bytes together has those cells empty
// and is Trimmed; their reading problems are still its Errors. The
// engine projects to the columns a kind reads, so that a file carrying
// megabytes beside them is read without copying them.
type Projector interface {
	Project(keep func(col int) bool, maxUnread int)
}

// SourceInfo is what a reader found out about a source: its format, the
// row of its header and, for delimited text, the encoding and delimiter
// used (declared, named by a sep= line or detected), or, for a workbook,
// its sheets in tab order and the one read. Its JSON is part of what a dry
// run and a preview print.
type SourceInfo struct {
	// Format is the format's name as package fileformat knows it: "csv",
	// "xlsx".
	Format string `json:"format"`
	// Encoding is the character set of a text file: utf-8, utf-16le,
	// utf-16be or windows-1252.
	Encoding string `json:"encoding,omitempty"`
	// Delimiter is a text file's field delimiter as people name it: "," or
	// "tab".
	Delimiter string `json:"delimiter,omitempty"`
	// SepLine reports that a text file began with the "sep=;" line Excel
	// writes to name its delimiter. The line is never data: it is skipped,
	// still counted as the file's row 1. Delimiter is the one it names
	// unless ReadOptions.Delimiter declared another.
	SepLine bool `json:"sep_line,omitempty"`
	// Quote is a text file's quote character when it is not ", and
	// Escape the character that escapes a quote in a quoted cell, when
	// there is one: declared (ReadOptions.Quote, Escape) or detected.
	Quote  string `json:"quote,omitempty"`
	Escape string `json:"escape,omitempty"`
	// Sheets lists a workbook's sheets in tab order.
	Sheets []string `json:"sheets,omitempty"`
	// Sheet is the workbook sheet read.
	Sheet string `json:"sheet,omitempty"`
	// HeaderRow is the row of the header as a spreadsheet shows it: a
	// workbook's sheet row, or a text file's row counted as Record.Row
	// counts them (1 unless blank lines, a sep= line or title rows come
	// first).
	HeaderRow int64 `json:"header_row,omitempty"`
	// Titles are the non-empty rows above the header that were passed
	// over (titles, notes), each as its cells joined by spaces.
	Titles []string `json:"titles,omitempty"`
	// Subject is a workbook's document subject (its properties).
	Subject string `json:"subject,omitempty"`
}

// TitleOf is a row above a header as SourceInfo.Titles keeps it.
func TitleOf(cells []string) string {
	var parts []string
	for _, c := range cells {
		if c = strings.TrimSpace(c); c != "" {
			parts = append(parts, c)
		}
	}
	t := strings.Join(parts, " ")
	if len(t) > 500 {
		cut := 500
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut]
	}
	return t
}

// HeaderScanRows is how many non-empty rows at the top of a file (of each
// sheet a workbook is searched in) ReadOptions.HeaderFunc is asked about.
// Titles and notes above a header take a few rows; a bound keeps what a
// reader holds back while it looks, and what it reads of a sheet it then
// passes over, small.
const HeaderScanRows = 20

// ReadOptions is what a user can tell the reader of any format. Each field
// applies to the formats that have the notion and is ignored by the others;
// each format's package turns it into its own, richer options (limits that
// only a program sets). The zero value detects what it can and applies each
// format's defaults.
type ReadOptions struct {
	// Encoding is a text file's character set (utf-8, utf-16, utf-16le,
	// utf-16be, windows-1252). Defaults to detection.
	Encoding string
	// Delimiter is a delimited text file's field delimiter. Defaults to
	// sniffing it.
	Delimiter rune
	// Quote is a delimited text file's quote character: " or '.
	// Defaults to ".
	Quote rune
	// Escape is the character that escapes the next one inside a quoted
	// cell of a delimited text file (\, as in \"). Defaults to none:
	// quotes are doubled.
	Escape rune
	// Sheet picks a workbook's sheet by name or by 1-based position.
	// Defaults to the first visible worksheet.
	Sheet string
	// HeaderRow is the 1-based row of the header, as a spreadsheet counts
	// rows (the numbering of Record.Row); the rows above it are not data.
	// It wins over HeaderFunc. Defaults to each format's rule: a text
	// file's first non-empty row, a sheet's first non-empty row that is not
	// a title.
	HeaderRow int64
	// HeaderFunc, when set, recognises the header row: among the first
	// HeaderScanRows (20) non-empty rows of a file (of each sheet a
	// workbook is searched in), the first for which it returns true is the
	// header, and the rows above it (titles, notes) are skipped. When no row
	// matches, readers fall back to their default rule.
	//
	// A workbook with several visible sheets and no Sheet named is searched
	// for the first sheet whose header matches, and one with no such sheet
	// is rejected: reading a sheet the caller's rule does not recognise
	// would be a guess.
	//
	// cells are the row as the reader would take it for a header; a
	// reader calls HeaderFunc from the goroutine that opens it, and never
	// after NewReader returns.
	HeaderFunc func(cells []string) bool
	// HeaderHint describes what HeaderFunc looks for ("the columns email,
	// name, signup_date"), for error messages.
	HeaderHint string
	// TmpDir is where a reader that needs temporary files (a workbook is
	// unzipped from disk) writes them. Defaults to os.TempDir().
	TmpDir string
	// KeepFormulaQuote keeps the apostrophe SafeCell puts in front of a
	// formula character. By default readers remove it, so that a file
	// written with SafeCell reads as the values it was written from.
	KeepFormulaQuote bool
	// Number is the file's declared number format (Conventions.Number). A
	// workbook writes a cell it stores as a number with its decimal
	// separator, so that the cell reads as the number it holds under the
	// file's locale, as its text cells do: a locale applies to text, a
	// typed cell keeps its value. Defaults to a decimal point.
	Number NumberFormat
	// MaxLineBytes caps one record of a text file as read; a longer one
	// rejects the file. 0 is the format's default.
	MaxLineBytes int
	// MaxCellBytes caps one cell; a longer cell is a row error. 0 is the
	// format's default.
	MaxCellBytes int
}
