// Package batch is the orchestrator: kinds are registered in a Registry, an
// Engine ingests files into a Store and works their valid rows with
// processors, and every row's outcome is recorded by the engine, never by the
// processor.
//
// The package never imports a store; store/sqlite and store/postgres
// implement Store, and cmd/batchctl wires one in.
//
// Counters are never incremented. Each chunk's counts are overwritten from an
// aggregate over its rows in the same transaction that changes the rows, each
// count group's (100 chunks) from its chunks, and a batch's totals are the
// sum over its count groups.
//
// ARCHITECTURE.md at the repository root follows one row through these
// steps and describes the data model and the row state machine.
package batch
