package rows

import "fmt"

// State is where a row is in its life. States are persisted as text and are
// append-only: a value, once written to a database, is never renamed.
type State string

// The row states of ARCHITECTURE.md "Row states".
const (
	StatePending    State = "pending"
	StateValid      State = "valid"
	StateInvalid    State = "invalid"
	StateProcessing State = "processing"
	StateSucceeded  State = "succeeded"
	StateFailed     State = "failed"
	StateRetrying   State = "retrying"
	StateUnknown    State = "unknown"
	StateDead       State = "dead"
	StateCancelled  State = "cancelled"
	StateSkipped    State = "skipped"
)

// States lists every state in a stable order, the order used for counters
// and reports.
var States = []State{
	StatePending, StateValid, StateInvalid, StateProcessing, StateSucceeded,
	StateFailed, StateRetrying, StateUnknown, StateDead, StateCancelled,
	StateSkipped,
}

// transitions is the state machine, encoded once. Skipped is reachable from
// every non-protected state and is added by CanTransition rather than listed
// here for each source.
var transitions = map[State][]State{
	StatePending:    {StateValid, StateInvalid},
	StateValid:      {StateProcessing, StateCancelled},
	StateProcessing: {StateSucceeded, StateFailed, StateRetrying, StateUnknown, StateDead, StateCancelled},
	StateRetrying:   {StateProcessing, StateCancelled},
}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	for _, known := range States {
		if s == known {
			return true
		}
	}
	return false
}

// Terminal reports whether a row in state s is finished: no worker will touch
// it again without a re-run.
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateFailed, StateDead, StateCancelled, StateSkipped, StateInvalid:
		return true
	}
	return false
}

// Open reports whether a row in state s still has work for a worker:
// valid, processing (its owner may have lost the lease) or retrying.
func (s State) Open() bool {
	return s == StateValid || s == StateProcessing || s == StateRetrying
}

// Protected reports whether a re-run must keep a row in state s as it is:
// completed or reviewed work is never undone.
func (s State) Protected() bool {
	return s == StateSucceeded || s == StateSkipped
}

// CanTransition reports whether a row may move from one state to another.
func CanTransition(from, to State) bool {
	if to == StateSkipped {
		return from.Valid() && !from.Protected()
	}
	for _, next := range transitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// Transition returns an error when the move from one state to another is not
// in the state machine.
func Transition(from, to State) error {
	if !CanTransition(from, to) {
		return fmt.Errorf("illegal row transition %s -> %s", from, to)
	}
	return nil
}

// Counts holds a number of rows per state.
type Counts map[State]int64

// Total returns the number of rows over all states.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Open returns the number of rows that still have work.
func (c Counts) Open() int64 {
	return c[StateValid] + c[StateProcessing] + c[StateRetrying]
}
