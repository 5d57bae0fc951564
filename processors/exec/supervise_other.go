//go:build !unix

package exec

import (
	"context"
	osexec "os/exec"
	"sync/atomic"
	"time"
)

// supervised is one run, without a supervisor: there are no process
// groups here, so cancelling ctx kills the program itself, not what it
// started, and nothing bounds a run whose worker stops.
type supervised struct {
	cmd       *osexec.Cmd
	cancelled atomic.Bool
}

func newSupervised(ctx context.Context, prog program, _, _ time.Duration) *supervised {
	s := &supervised{cmd: osexec.CommandContext(ctx, prog.path, prog.args...)}
	s.cmd.Cancel = func() error {
		err := s.cmd.Process.Kill()
		if err == nil {
			s.cancelled.Store(true)
		}
		return err
	}
	return s
}

func (s *supervised) start() error { return s.cmd.Start() }

// finish has no status to read: the program's is cmd's.
func (s *supervised) finish() *exitStatus { return nil }

func (s *supervised) stopped() bool { return s.cancelled.Load() }

// lockThread has nothing to hold without a parent-death signal.
func lockThread() (unlock func()) { return func() {} }
