package rows

import (
	"slices"
	"strings"
	"testing"
)

// legal is the state machine of ARCHITECTURE.md "Row states", written out edge by
// edge independently of the transitions map, so that a change to either
// shows up here. Skipped is listed explicitly for every non-protected state.
var legal = map[State][]State{
	StatePending:    {StateValid, StateInvalid, StateSkipped},
	StateValid:      {StateProcessing, StateCancelled, StateSkipped},
	StateInvalid:    {StateSkipped},
	StateProcessing: {StateSucceeded, StateFailed, StateRetrying, StateUnknown, StateDead, StateCancelled, StateSkipped},
	StateSucceeded:  {},
	StateFailed:     {StateSkipped},
	StateRetrying:   {StateProcessing, StateCancelled, StateSkipped},
	StateUnknown:    {StateSkipped},
	StateDead:       {StateSkipped},
	StateCancelled:  {StateSkipped},
	StateSkipped:    {},
}

func TestStates(t *testing.T) {
	t.Parallel()

	if got, want := len(States), 11; got != want {
		t.Fatalf("len(States) = %d, want %d", got, want)
	}
	seen := map[State]bool{}
	for _, s := range States {
		if seen[s] {
			t.Errorf("state %q listed twice", s)
		}
		seen[s] = true
		if !s.Valid() {
			t.Errorf("%q.Valid() = false", s)
		}
		if s != State(strings.ToLower(string(s))) || strings.ContainsAny(string(s), " -") {
			t.Errorf("state %q is not a lower-case snake_case word", s)
		}
		if _, ok := legal[s]; !ok {
			t.Errorf("state %q missing from the test's table", s)
		}
	}
	for _, s := range []State{"", "Pending", "done", "VALID", " valid"} {
		if s.Valid() {
			t.Errorf("%q.Valid() = true, want false", s)
		}
	}
}

func TestCanTransition(t *testing.T) {
	t.Parallel()

	// Every ordered pair of states, plus unknown names on either side.
	all := append(slices.Clone(States), State("bogus"), State(""))
	for _, from := range all {
		for _, to := range all {
			want := slices.Contains(legal[from], to)
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%q, %q) = %v, want %v", from, to, got, want)
			}
			err := Transition(from, to)
			if want && err != nil {
				t.Errorf("Transition(%q, %q) = %v, want nil", from, to, err)
			}
			if !want {
				if err == nil {
					t.Errorf("Transition(%q, %q) = nil, want an error", from, to)
				} else if !strings.Contains(err.Error(), string(from)+" -> "+string(to)) {
					t.Errorf("Transition(%q, %q) error %q does not name the move", from, to, err)
				}
			}
		}
	}
}

func TestStatePredicates(t *testing.T) {
	t.Parallel()

	tests := []struct {
		state                     State
		terminal, open, protected bool
	}{
		{StatePending, false, false, false},
		{StateValid, false, true, false},
		{StateInvalid, true, false, false},
		{StateProcessing, false, true, false},
		{StateSucceeded, true, false, true},
		{StateFailed, true, false, false},
		{StateRetrying, false, true, false},
		{StateUnknown, false, false, false},
		{StateDead, true, false, false},
		{StateCancelled, true, false, false},
		{StateSkipped, true, false, true},
		{"bogus", false, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			t.Parallel()
			if got := tt.state.Terminal(); got != tt.terminal {
				t.Errorf("Terminal() = %v, want %v", got, tt.terminal)
			}
			if got := tt.state.Open(); got != tt.open {
				t.Errorf("Open() = %v, want %v", got, tt.open)
			}
			if got := tt.state.Protected(); got != tt.protected {
				t.Errorf("Protected() = %v, want %v", got, tt.protected)
			}
		})
	}
}

// TestStateMachineShape checks properties the design relies on, whatever the
// exact edges are.
func TestStateMachineShape(t *testing.T) {
	t.Parallel()

	for _, s := range States {
		// Terminal rows are only ever touched again by a reviewer.
		if s.Terminal() {
			for _, to := range States {
				if CanTransition(s, to) && to != StateSkipped {
					t.Errorf("terminal %s can move to %s", s, to)
				}
			}
		}
		// Open and terminal are exclusive.
		if s.Terminal() && s.Open() {
			t.Errorf("%s is both terminal and open", s)
		}
		// Protected work is never undone: no way out at all.
		if s.Protected() {
			for _, to := range States {
				if CanTransition(s, to) {
					t.Errorf("protected %s can move to %s", s, to)
				}
			}
		}
		// Skipped is reachable from exactly the non-protected states.
		if got, want := CanTransition(s, StateSkipped), !s.Protected(); got != want {
			t.Errorf("CanTransition(%s, skipped) = %v, want %v", s, got, want)
		}
		// No state moves to itself or back to pending.
		if CanTransition(s, s) {
			t.Errorf("%s can move to itself", s)
		}
		if CanTransition(s, StatePending) {
			t.Errorf("%s can move back to pending", s)
		}
	}

	// Every state is reachable from pending.
	reached := map[State]bool{StatePending: true}
	queue := []State{StatePending}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		for _, to := range States {
			if !reached[to] && CanTransition(from, to) {
				reached[to] = true
				queue = append(queue, to)
			}
		}
	}
	for _, s := range States {
		if !reached[s] {
			t.Errorf("%s is not reachable from pending", s)
		}
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		counts      Counts
		total, open int64
	}{
		{"nil", nil, 0, 0},
		{"empty", Counts{}, 0, 0},
		{"only terminal", Counts{StateSucceeded: 3, StateInvalid: 2, StateSkipped: 1}, 6, 0},
		{"mixed", Counts{StateValid: 5, StateProcessing: 2, StateRetrying: 1, StateUnknown: 4, StateFailed: 7}, 19, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.counts.Total(); got != tt.total {
				t.Errorf("Total() = %d, want %d", got, tt.total)
			}
			if got := tt.counts.Open(); got != tt.open {
				t.Errorf("Open() = %d, want %d", got, tt.open)
			}
		})
	}
}
