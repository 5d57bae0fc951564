// Package rows owns what a single row of a batch is: its State machine, the
// field errors that explain an invalid row, the Record a reader yields, and
// the Binder that turns a record into a kind's Go struct (Mapping, Enum,
// Decimal for exact amounts, ExcelSerialTime for dates that arrive as
// spreadsheet serial numbers).
//
// It is also the vocabulary every file format shares, so that the engine
// reads and writes files without knowing their format: the Reader and
// Writer interfaces, what users may tell them (ReadOptions, WriteOptions),
// what a reader found out about a source (SourceInfo), the typed Cell a
// writer stores, the rows of an error report and the columns of an import
// template, and SafeCell against formula injection.
//
// The formats themselves live in subpackages, one per format (csvfile,
// xlsxfile), and package fileformat is the one place that decides which
// format a file is. This package imports only the standard library and
// golang.org/x/text, so anything may import it without pulling in a
// spreadsheet library. The architecture is described in ARCHITECTURE.md at
// the repository root.
//
// Nothing here touches a database or a file.
package rows
