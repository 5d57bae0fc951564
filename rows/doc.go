// Package rows owns what a single row of a batch is: its State machine, the
// field errors that explain an invalid row, the streaming readers that turn a
// file into records, and the Binder that turns a record into a kind's Go
// struct.
//
// The CSV reader takes files as users send them: it decodes UTF-16 and
// Windows-1252 to UTF-8, sniffs the delimiter, and turns bytes that cannot
// be stored (NUL, invalid UTF-8, over-long cells) into row errors while
// bounding the memory a hostile file can take (CSVOptions). The CSV writer
// writes what spreadsheet programs open safely, and what the reader reads
// back as written (SafeCell and CSVOptions.KeepFormulaQuote).
//
// The XLSX reader streams one sheet with excelize's Rows iterator and reads
// cells as their raw typed values (dates from Excel serials in either date
// system), after inspecting the package with archive/zip so that a hostile
// workbook (a zip bomb, a DOCTYPE, a renamed .xls or .ods, rows wider than
// the header allows) is refused before excelize works on it (XLSXOptions).
// The XLSX writer streams a typed sheet with a frozen header; the error
// report and the import template have XLSX forms (WriteErrorReportXLSX,
// WriteTemplateXLSX).
//
// Nothing here touches a database. Readers hold a bounded number of rows in
// memory (the XLSX reader looks a few rows ahead), so a file of any size can
// be read in constant space.
package rows
