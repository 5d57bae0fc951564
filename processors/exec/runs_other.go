//go:build !linux

package exec

import "log/slog"

// runDir records nothing here: without /proc, New could not tell a dead
// worker's leftovers from other processes. A run is bounded by its
// supervisor's deadline instead (on unix).
type runDir struct{}

func openRunDir(string) (*runDir, error) { return &runDir{}, nil }

func (*runDir) record(string) error { return nil }

func (*runDir) remove(string) {}

func (*runDir) reap(*slog.Logger) error { return nil }
