// Package xlsxfile is the XLSX format: a streaming reader of one sheet, a
// streaming writer of one typed sheet, and the XLSX forms of the error
// report and the import template. It is the only package of the module
// that imports excelize (for writing), so that the rest of the engine does
// not pull it in. The architecture is described in ARCHITECTURE.md at the repository
// root.
//
// The Reader reads one sheet itself, over the zip entry with archive/zip:
// excelize is not on the read path. A hand-written XML scanner (xmlscan.go)
// walks the sheet's bytes a row at a time (row numbers, the cells' r, t and
// s attributes, <v>, inline strings and their rich text runs, formulas,
// entities, CDATA), allocating a string per row rather than a token per
// tag, and cells are read as their raw typed values (dates from Excel
// serials by the style's number format, in either date system, converted by
// rows.ExcelSerialTime). Shared strings are read once into a table of
// offsets (4 bytes a string) over their text, held in memory up to 8 MiB
// of text and spilled past that to a temporary file read through a window
// and a small cache, so a table of millions of strings costs tens of MB,
// not hundreds. Before any of it the package is inspected so that a
// hostile workbook (a zip bomb, a DOCTYPE, a renamed .xls or .ods, an
// encrypted one) is refused (Options); while reading, a row wider than the
// header allows, rows or cells out of order and any run of more than 1 MiB
// without markup are refused before they are held, so memory stays
// bounded whatever the file's size. Given a rule for the header
// (Options.HeaderFunc), it reads the first sheet whose header the rule
// recognises, past instructions sheets and title rows.
//
// The Writer streams a typed sheet with a frozen header; WriteErrorReport
// marks the cells an error names; WriteTemplate offers dropdowns for
// columns with fixed values. Text cells are written as text: a workbook
// never evaluates one, so they carry no rows.SafeCell apostrophe (the
// Reader still takes one off, for files written with it).
//
// Format adapts all of it to the format-neutral vocabulary of package rows
// for package fileformat.
package xlsxfile
