// Package csvfile is the CSV format: a streaming reader that takes files as
// users send them, a writer of what spreadsheet programs open safely, and
// the CSV forms of the error report and the import template. The
// architecture is described in ARCHITECTURE.md at the repository root.
//
// The Reader decodes UTF-16 and Windows-1252 to UTF-8 (CanonicalEncoding
// names them), takes the delimiter from Excel's "sep=;" first line or
// sniffs it (SniffDelimiter), finds the header under title rows when told
// how (Options.HeaderRow, Options.HeaderFunc), and turns bytes that
// cannot be stored (NUL, invalid UTF-8, over-long cells) into row errors
// while bounding the memory a hostile file can take (Options). It holds
// one record at a time (at most rows.HeaderScanRows while it looks for
// the header), so a file of any size is read in constant space.
//
// The Writer writes UTF-8 with a byte order mark and CRLF line ends, every
// cell through rows.SafeCell, which the Reader takes off again
// (Options.KeepFormulaQuote keeps it): a file written here reads back as
// written.
//
// Format adapts all of it to the format-neutral vocabulary of package rows
// for package fileformat.
package csvfile
