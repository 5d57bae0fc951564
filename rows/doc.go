// Package rows owns what a single row of a batch is: its State machine, the
// field errors that explain an invalid row, the streaming readers that turn a
// file into records, and the Binder that turns a record into a kind's Go
// struct.
//
// Nothing here touches a database. Readers never hold more than one record
// in memory, so a file of any size can be read in constant space.
package rows
