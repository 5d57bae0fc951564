package xlsxfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rowfate/rowfate/rows"
)

// CodeCellError is the row error of a cell that holds an Excel error value
// (#DIV/0!, #N/A, #REF!, ...), usually a formula that failed. Only
// workbooks have error values, so the code is this package's; like every
// code it is persisted and never renamed.
const CodeCellError rows.Code = "cell_error"

// CodeFormulaNotCalculated is the row error of a cell that holds a formula
// Excel never calculated: a file written by a library and never opened in
// Excel keeps the formula without its value. The cell is not read as 0 or
// "", which would be data the file does not hold; opening the file in
// Excel and saving it again stores the values. Persisted; never renamed.
const CodeFormulaNotCalculated rows.Code = "formula_not_calculated"

// Options tunes a Reader. The zero value is usable; every limit has
// a default that a legitimate 1,000,000-row workbook fits.
type Options struct {
	// Sheet picks the sheet by name (case-insensitive, as Excel compares
	// names) or, when no sheet has that name, by its 1-based position in
	// the tab order ("2" is the second tab). Defaults to the first visible
	// worksheet.
	Sheet string
	// HeaderRow is the 1-based row of the header. It wins over HeaderFunc.
	// Defaults to the first non-empty row that is not a title (see
	// Reader).
	HeaderRow int64
	// HeaderFunc, when set, recognises the header: the first of a sheet's
	// first rows.HeaderScanRows non-empty rows it accepts, with the cells
	// the reader would take for a header. When no Sheet is named and the
	// workbook has several visible worksheets, the reader reads the first
	// whose header it accepts, and refuses the file when it accepts none.
	// Otherwise a sheet none of whose rows it accepts falls back to the
	// default rule. See rows.ReadOptions.HeaderFunc.
	HeaderFunc func(cells []string) bool
	// HeaderHint describes what HeaderFunc looks for ("the columns email,
	// name, signup_date"), for the error of a workbook none of whose sheets
	// has such a header.
	HeaderHint string
	// MaxFileBytes caps the file as uploaded, checked before anything is
	// opened. Defaults to 256 MiB.
	MaxFileBytes int64
	// MaxUnzipBytes caps the sum of the parts' unpacked sizes. Defaults to
	// 2 GiB; sheets are streamed and large shared strings tables spill to
	// TmpDir, so this is a disk bound, not a memory one.
	MaxUnzipBytes int64
	// MaxMemoryBytes caps the unpacked size of the parts other than
	// worksheets and shared strings larger than 4 MiB: the small parts
	// (workbook, styles, relationships) are read whole. Defaults to 64 MiB.
	MaxMemoryBytes int64
	// MaxCompressionRatio refuses a part larger than 1 MiB that inflates
	// more than this many times its packed size (a zip bomb). Defaults to
	// 200; spreadsheets inflate 5 to 30 times.
	MaxCompressionRatio int64
	// TmpDir is where the upload and a large shared strings table are
	// written. Defaults to os.TempDir().
	TmpDir string
	// MaxColumns caps the header's columns. Defaults to 1024.
	MaxColumns int
	// ExtraColumns is how many columns past the header a data row may
	// reach; cells there are a row error (ragged_row), and a cell farther
	// out rejects the file before the row is read. Defaults to 64.
	ExtraColumns int
	// MaxCellBytes caps one cell; a longer cell is a row error. Defaults to
	// 64 KiB.
	MaxCellBytes int
	// MaxSharedStrings caps the workbook's shared strings table (the
	// distinct texts of an Excel-made file). The table costs 4 bytes of
	// memory a string (its offset) and its text on disk past 8 MiB:
	// measured, 2,000,000 strings (a 1,000,000-row sheet with two columns
	// of distinct text) peak at about 36 MiB RSS for the whole read.
	// Defaults to 2,200,000.
	MaxSharedStrings int
	// KeepFormulaQuote keeps a leading apostrophe in front of a formula
	// character, as the CSV reader's option of that name does: by default it is
	// removed, so a file written with rows.SafeCell reads as its values.
	KeepFormulaQuote bool
	// Decimal is the decimal separator a cell stored as a number is
	// written with: the file's declared number format's, so that a typed
	// number reads as itself under a locale with a decimal comma, which
	// applies to the text cells. Defaults to a point.
	Decimal rune
}

// xlsxSpillBytes is the size past which a sheet or the shared strings
// count as streamed parts rather than small ones for MaxMemoryBytes (the
// spill size excelize used when it read the sheets).
const xlsxSpillBytes = 4 << 20

type xlsxOpts struct {
	Options
	spillBytes int64
}

// OptionsFrom returns the options a user's rows.ReadOptions ask of an XLSX
// reader: sheet, header row or the rule that recognises it, temporary
// folder, the formula quote and the cell size limit. What only text has
// (encoding, delimiter, line length) does not apply.
func OptionsFrom(o rows.ReadOptions) *Options {
	return &Options{
		Sheet:            o.Sheet,
		HeaderRow:        o.HeaderRow,
		HeaderFunc:       o.HeaderFunc,
		HeaderHint:       o.HeaderHint,
		TmpDir:           o.TmpDir,
		MaxCellBytes:     o.MaxCellBytes,
		KeepFormulaQuote: o.KeepFormulaQuote,
		Decimal:          o.Number.Decimal,
	}
}

func (o *Options) withDefaults() *xlsxOpts {
	c := &xlsxOpts{spillBytes: xlsxSpillBytes}
	if o != nil {
		c.Options = *o
	}
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxFileBytes, 256<<20)
	def(&c.MaxUnzipBytes, 2<<30)
	def(&c.MaxMemoryBytes, 64<<20)
	def(&c.MaxCompressionRatio, 200)
	if c.MaxColumns <= 0 {
		c.MaxColumns = 1024
	}
	if c.ExtraColumns <= 0 {
		c.ExtraColumns = 64
	}
	if c.MaxCellBytes <= 0 {
		c.MaxCellBytes = 64 << 10
	}
	if c.MaxSharedStrings <= 0 {
		c.MaxSharedStrings = 2_200_000
	}
	return c
}

// Reader reads one sheet of an XLSX workbook a row at a time with its own
// XML scanner over the zip entry (see the package comment). Cells are read as their raw values
// with their types: numbers as stored (no thousands separators, no rounding
// by the display format; the decimal separator is Options.Decimal),
// booleans as "true" and "false", dates and times
// converted from Excel serial numbers in the workbook's date system (1900
// or 1904, by rows.ExcelSerialTime) to 2006-01-02, 15:04:05 or
// 2006-01-02 15:04:05, formulas as their cached values. Row numbers are the
// sheet's.
//
// The header is the row Options.HeaderRow names, else the first row
// Options.HeaderFunc accepts among the sheet's first rows.HeaderScanRows
// non-empty rows, else the first non-empty row that is not a title. A
// title is a row of one non-empty cell that is merged across columns, or
// that is followed, within the next rows.HeaderScanRows non-empty rows, by
// a row of two cells or more; rows above the header are not data. A sheet
// of one column, whose rows all have one cell, has its first row for a
// header; one whose first rows are followed that closely by a row of two
// cells (a note beside a value) reads that row as its header, which
// Options.HeaderRow or Options.HeaderFunc settles.
//
// A formula cell without a cached value (a file a library wrote and Excel
// never calculated) is a formula_not_calculated row error, its cell
// emptied: neither 0 nor the formula's text is what the cell shows.
//
// A date cell on a day Excel shows but no calendar has (the 1900 system's
// serial 60, its phantom 1900-02-29, and serial 0, "1900-01-00") is a
// bad_date row error naming the day, its cell emptied: a guessed
// neighbouring day would be data the file did not hold.
//
// Hostile files are refused before work (see Options for the limits):
// a file that is too large, an .xls, .xlsb, .ods or password-protected
// workbook, a damaged zip, a zip bomb, a DOCTYPE in any part, a row wider
// than the header allows, rows out of order, malformed XML. Each is a
// *rows.FileError; a panic while reading would be one too.
//
// Close releases the temporary files.
type Reader struct {
	name string
	o    *xlsxOpts

	dir   string // temporary folder of this reader
	spool *os.File
	pkg   *xlsxPackage
	sheet xlsxSheetInfo
	// titles are the non-empty rows above the header, as
	// rows.SourceInfo.Titles keeps them.
	titles []string
	subj   *string // the document's subject, once read
	scan   *xlsxSheetScanner
	header []string
	hdrRow int64
	width  int // header columns
	// pending are rows read while looking for the header that come after
	// it, as read (untyped); Next returns them before reading on. A run
	// of blank rows is held as its last row: what Next counts of it is the
	// same.
	pending []*xlsxRow

	skipped int64
	lastRow int64
	err     error // sticky: after a file error, every Next returns it
}

// xlsxRow is one row as read: its number and cell values by column index.
type xlsxRow struct {
	n      int64
	values []string
	meta   []xlsxCellMeta
}

var _ rows.Reader = (*Reader)(nil)

// NewReader copies r to a file under TmpDir (refusing more than
// MaxFileBytes), inspects the workbook, opens the chosen sheet and reads its
// header. name is used in errors only. Every problem with the file is a
// *rows.FileError.
func NewReader(r io.Reader, name string, opts *Options) (xr *Reader, err error) {
	x := &Reader{name: name, o: opts.withDefaults()}
	defer func() {
		if v := recover(); v != nil {
			err = x.fileErr(fmt.Errorf("the XLSX parser failed on this file: %v", v))
		}
		if err != nil {
			x.Close()
			xr = nil
		}
	}()
	if err := x.spoolFrom(r); err != nil {
		return nil, err
	}
	if err := x.open(); err != nil {
		return nil, x.fileErr(err)
	}
	if err := x.chooseSheet(); err != nil {
		return nil, x.fileErr(err)
	}
	return x, nil
}

func (x *Reader) fileErr(err error) error {
	var fe *rows.FileError
	if errors.As(err, &fe) {
		return fe
	}
	return &rows.FileError{File: x.name, Err: err}
}

// spoolFrom copies the upload to a temporary file, so that archive/zip can
// read it at random without holding it in memory.
func (x *Reader) spoolFrom(r io.Reader) error {
	// One folder per reader holds the upload and the shared strings'
	// spill, so that Close removes them all, even after a read that failed
	// half way.
	dir, err := os.MkdirTemp(x.o.TmpDir, "rowfate-xlsx-")
	if err != nil {
		return fmt.Errorf("xlsx: temporary folder: %w", err)
	}
	x.dir = dir
	f, err := os.Create(filepath.Join(dir, "upload.xlsx"))
	if err != nil {
		return fmt.Errorf("xlsx: temporary file: %w", err)
	}
	x.spool = f
	n, err := io.Copy(f, io.LimitReader(r, x.o.MaxFileBytes+1))
	if err != nil {
		return fmt.Errorf("xlsx: copy %s: %w", x.name, err)
	}
	if n > x.o.MaxFileBytes {
		return x.fileErr(fmt.Errorf("the file is larger than the limit of %d bytes", x.o.MaxFileBytes))
	}
	if n == 0 {
		return x.fileErr(errors.New("the file is empty"))
	}
	return nil
}

func (x *Reader) open() error {
	st, err := x.spool.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	head := make([]byte, 8)
	n, _ := x.spool.ReadAt(head, 0)
	head = head[:n]
	switch {
	case bytes.Equal(head, xlsxOLEMagic):
		return xlsxOLEKind(x.spool, size)
	case !bytes.HasPrefix(head, xlsxZipMagic):
		return errors.New("the file is not an XLSX workbook (it does not start like a zip archive)")
	}
	x.pkg, err = inspectXLSX(x.spool, size, x.o, x.dir)
	if err != nil {
		return err
	}
	_, err = x.pickSheet() // a named sheet the workbook lacks
	return err
}

// step reads the next row of the sheet that has a row element, refusing
// one with a cell past column limit before the row is held. It returns
// io.EOF at the end.
func (x *Reader) step(limit int) (*xlsxRow, error) {
	n, values, meta, err := x.scan.next(limit)
	if err != nil {
		var wide *errXLSXTooWide
		if errors.As(err, &wide) {
			return nil, x.tooWide(wide)
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("sheet %q: %w", x.sheet.Name, err)
	}
	// The scanner reuses its slice; rows read while looking for the
	// header may be held back.
	var kept []xlsxCellMeta
	if len(meta) > 0 {
		kept = append(make([]xlsxCellMeta, 0, len(meta)), meta...)
	}
	return &xlsxRow{n: n, values: values, meta: kept}, nil
}

// tooWide is the file error of a row with a cell past the columns allowed:
// the limit while the header is looked for, the header's width and
// ExtraColumns after.
func (x *Reader) tooWide(wide *errXLSXTooWide) error {
	if x.header == nil {
		return fmt.Errorf("sheet %q: %v, past the limit of %d columns", x.sheet.Name, wide, x.o.MaxColumns)
	}
	return fmt.Errorf("sheet %q: %v, more than %d columns past the header's last column %s",
		x.sheet.Name, wide, x.o.ExtraColumns, xlsxColName(x.width))
}

// typed converts row's raw values by their cells' types and styles, and
// returns the row errors found on the way (error values, formulas never
// calculated, oversized cells).
func (x *Reader) typed(r *xlsxRow) []rows.FieldError {
	var errs []rows.FieldError
	// A formula without a value may be read as "" or its text, and "" may
	// be left out of the values at the end of the row: mark them from the
	// scanner's notes first, each emptied, in column order.
	for _, c := range r.meta {
		if !c.uncalculated {
			continue
		}
		for len(r.values) < c.col {
			r.values = append(r.values, "")
		}
		r.values[c.col-1] = ""
	}
	m := 0
	for i, v := range r.values {
		col := i + 1
		for m < len(r.meta) && r.meta[m].col < col {
			m++
		}
		var c xlsxCellMeta
		if m < len(r.meta) && r.meta[m].col == col {
			c = r.meta[m]
		}
		if c.uncalculated {
			errs = append(errs, rows.FieldError{Row: r.n, Column: x.column(i), Code: CodeFormulaNotCalculated,
				Message: fmt.Sprintf("cell %s%d has a formula that was never calculated: open the file in Excel and save it again", xlsxColName(col), r.n)})
			continue
		}
		if v == "" {
			continue
		}
		switch c.typ {
		case "b":
			switch v {
			case "1":
				v = "true"
			case "0":
				v = "false"
			}
		case "e":
			// The cell is emptied, as the CSV reader empties a cell it
			// rejects: the error is the row's, not a second one from
			// binding "#DIV/0!" as a number. The message keeps the value.
			errs = append(errs, rows.FieldError{Row: r.n, Column: x.column(i), Code: CodeCellError,
				Message: fmt.Sprintf("cell %s%d holds the error %s", xlsxColName(col), r.n, v)})
			v = ""
		case "d":
			v = xlsxISODate(strings.TrimSpace(v))
		case "s", "str", "inlineStr":
			if !x.o.KeepFormulaQuote {
				v = rows.UnquoteFormula(v) // as the CSV reader does
			}
		default: // a number
			if k := x.pkg.styles.kind(c.style); k != xlsxNumber {
				s, ok, err := xlsxSerialText(v, k, x.pkg.date1904)
				if err != nil {
					// A day Excel shows but no calendar has: the cell is
					// emptied, as for an error value, and the row says why.
					errs = append(errs, rows.FieldError{Row: r.n, Column: x.column(i), Code: rows.CodeBadDate,
						Message: fmt.Sprintf("cell %s%d holds the date serial %s, which %v", xlsxColName(col), r.n, strings.TrimSpace(v), err)})
					v = ""
					break
				}
				if ok {
					v = s
					break
				}
			}
			v = xlsxNumberText(v)
			if d := x.o.Decimal; d != 0 && d != '.' {
				v = strings.Replace(v, ".", string(d), 1)
			}
		}
		if len(v) > x.o.MaxCellBytes {
			errs = append(errs, rows.FieldError{Row: r.n, Column: x.column(i), Code: rows.CodeCellTooLong,
				Message: fmt.Sprintf("cell %s%d is %d bytes, more than the limit of %d", xlsxColName(col), r.n, len(v), x.o.MaxCellBytes)})
			v = ""
		}
		r.values[i] = v
	}
	return errs
}

func (x *Reader) column(i int) string {
	if i < len(x.header) {
		return strings.TrimSpace(x.header[i])
	}
	return xlsxColName(i + 1)
}

func xlsxBlank(values []string) bool {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return false
		}
	}
	return true
}

// Header returns the header row as the sheet spells it, without trailing
// empty columns.
func (x *Reader) Header() []string { return x.header }

// SkippedEmpty returns how many empty rows below the header were skipped
// so far: rows without values and rows the sheet leaves out.
func (x *Reader) SkippedEmpty() int64 { return x.skipped }

// Sheets lists the workbook's sheet names in tab order.
func (x *Reader) Sheets() []string {
	out := make([]string, len(x.pkg.sheets))
	for i, s := range x.pkg.sheets {
		out[i] = s.Name
	}
	return out
}

// Sheet returns the name of the sheet being read.
func (x *Reader) Sheet() string { return x.sheet.Name }

// HeaderRow returns the sheet row of the header.
func (x *Reader) HeaderRow() int64 { return x.hdrRow }

// Info describes the workbook as read: format "xlsx", its sheets in tab
// order, the sheet read and the sheet row of its header.
func (x *Reader) Info() rows.SourceInfo {
	return rows.SourceInfo{Format: Name, Sheets: x.Sheets(), Sheet: x.Sheet(), HeaderRow: x.HeaderRow(), Titles: x.titles,
		Subject: x.subject()}
}

// subject reads the document's subject once.
func (x *Reader) subject() string {
	if x.subj == nil {
		s := x.pkg.subject()
		x.subj = &s
	}
	return *x.subj
}

// Date1904 reports whether the workbook uses the 1904 date system.
func (x *Reader) Date1904() bool { return x.pkg.date1904 }

// Next returns the next non-empty row, or io.EOF. Its Row (and Line) is the
// sheet's row number.
func (x *Reader) Next() (rec rows.Record, err error) {
	if x.err != nil {
		return rows.Record{}, x.err
	}
	defer func() {
		if v := recover(); v != nil {
			err = x.fileErr(fmt.Errorf("the XLSX parser failed after row %d: %v", x.lastRow, v))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			x.err = err
		}
	}()
	for {
		r, err := x.nextRow(x.width + x.o.ExtraColumns)
		if errors.Is(err, io.EOF) {
			return rows.Record{}, io.EOF
		}
		if err != nil {
			return rows.Record{}, x.fileErr(err)
		}
		x.skipped += r.n - x.lastRow - 1 // rows the sheet leaves out
		x.lastRow = r.n
		errs := x.typed(r)
		if xlsxBlank(r.values) && len(errs) == 0 {
			x.skipped++
			continue
		}
		values := r.values
		for len(values) < x.width {
			values = append(values, "")
		}
		for i := x.width; i < len(values); i++ {
			if strings.TrimSpace(values[i]) != "" {
				errs = append(errs, rows.FieldError{Row: r.n, Code: rows.CodeRaggedRow,
					Message: fmt.Sprintf("cell %s%d has a value outside the header's columns (A to %s)", xlsxColName(i+1), r.n, xlsxColName(x.width))})
				break
			}
		}
		if len(values) > x.width && len(errs) == 0 {
			values = values[:x.width] // only blank cells past the header
		}
		return rows.Record{Row: r.n, Line: r.n, Values: values, Errors: errs}, nil
	}
}

// Close removes the temporary files. It is safe to call more than once.
func (x *Reader) Close() error {
	var errs []error
	if x.scan != nil {
		errs = append(errs, x.scan.close())
		x.scan = nil
	}
	errs = append(errs, x.pkg.close()) // the package's facts stay readable
	if x.spool != nil {
		errs = append(errs, x.spool.Close())
		x.spool = nil
	}
	if x.dir != "" {
		errs = append(errs, os.RemoveAll(x.dir))
		x.dir = ""
	}
	return errors.Join(errs...)
}
