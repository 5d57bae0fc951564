// Package xlsxfile is the XLSX format: a streaming reader of one sheet, a
// streaming writer of one typed sheet, and the XLSX forms of the error
// report and the import template. It is the only package of the module
// that imports excelize, so that the rest of the engine does not pull it
// in. The architecture is described in ARCHITECTURE.md at the repository
// root.
//
// The Reader streams one sheet with excelize's Rows iterator and reads
// cells as their raw typed values (dates from Excel serials in either date
// system, converted by rows.ExcelSerialTime), after inspecting the package
// with archive/zip so that a hostile workbook (a zip bomb, a DOCTYPE, a
// renamed .xls or .ods, rows wider than the header allows) is refused
// before excelize works on it (Options). A scanner walks the sheet's XML a
// few rows ahead of excelize for what its streaming API does not tell (a
// cell's type and style, a formula never calculated, rows out of order),
// so memory stays bounded whatever the file's size. Given a rule for the
// header (Options.HeaderFunc), it reads the first sheet whose header the
// rule recognises, past instructions sheets and title rows.
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
