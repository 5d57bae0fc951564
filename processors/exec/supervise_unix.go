//go:build unix

package exec

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	osexec "os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// supervisor is the /bin/sh program that leads a run's process group: it
// is what the worker starts, and it starts the row's program in the same
// group. It is a shell script so that nothing has to be installed beside
// the worker, and so small that it is read at a glance. Its arguments are
// the run's deadline and grace in seconds, each twice (with decimals, for
// a sleep that takes them, and rounded up, for one that does not), then
// the program and its arguments; fd 3 is where it reports the program's
// exit status.
//
//   - SIGTERM or SIGHUP (the parent-death signal: the worker died) kills
//     the whole group at once: nobody is left to wait for a grace.
//   - SIGUSR1 (the worker stops the run, or the deadline came) sends
//     SIGTERM to the whole group, and SIGKILL after the grace; the
//     supervisor ignores the SIGTERM it sends itself.
//   - The program's stdin is the supervisor's: a background job's stdin is
//     /dev/null unless redirected, so it goes through fd 4. The program is
//     started in the background so that the traps run while it runs (a
//     shell runs traps between commands only), and, being a background
//     job of a shell without job control, it starts with SIGINT and
//     SIGQUIT ignored.
//   - A wait interrupted by a trap returns above 128 with the program still
//     running: it waits again.
//   - Once the program has ended, its status goes to fd 3 and everything
//     left in the group (what the program started, the deadline's sleep,
//     the supervisor) is killed: a finished run leaves nothing behind. A
//     shell cannot exit with a status after killing its own group, hence
//     fd 3.
const supervisor = `d=$1 dc=$2 g=$3 gc=$4
shift 4
trap 'kill -KILL 0' TERM HUP
stop() {
	trap '' TERM USR1
	kill -TERM 0
	(sleep "$g" 2>/dev/null || sleep "$gc"; kill -KILL 0) 3>&- </dev/null >/dev/null 2>&1 &
}
trap stop USR1
exec 4<&0 </dev/null
"$@" <&4 3>&- 4<&- &
p=$!
exec 4<&-
(sleep "$d" 2>/dev/null || sleep "$dc"; kill -USR1 $$) 3>&- </dev/null >/dev/null 2>&1 &
while :; do
	wait "$p"
	s=$?
	[ "$s" -gt 128 ] && kill -0 "$p" 2>/dev/null || break
done
echo "$s" >&3
kill -KILL 0
`

// supervised is one run under its supervisor.
type supervised struct {
	cmd *osexec.Cmd
	// status is the read end of the supervisor's fd 3.
	status *os.File
	// cancelled is set once the worker has asked the supervisor to stop.
	cancelled atomic.Bool
}

// newSupervised prepares a run of prog under a supervisor that ends it
// left from now (and grace later) whatever becomes of the worker.
func newSupervised(ctx context.Context, prog program, left, grace time.Duration) *supervised {
	args := append([]string{"-c", supervisor, "rowfate-exec",
		seconds(left), ceilSeconds(left), seconds(grace), ceilSeconds(grace),
		prog.path}, prog.args...)
	s := &supervised{cmd: osexec.CommandContext(ctx, "/bin/sh", args...)}
	s.cmd.SysProcAttr = sysProcAttr()
	s.cmd.Cancel = func() error {
		err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGUSR1)
		if errors.Is(err, syscall.ESRCH) {
			// Nothing left to stop: tell os/exec, so that a program that
			// had already exited 0 is not reported as interrupted.
			return os.ErrProcessDone
		}
		if err == nil {
			s.cancelled.Store(true)
		}
		return err
	}
	return s
}

// seconds formats d for sleep, in seconds with milliseconds.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(max(d, 0).Seconds(), 'f', 3, 64)
}

// ceilSeconds formats d for a sleep that takes whole seconds only, rounded
// up: the bound may come a little late, never early.
func ceilSeconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(max(d, 0).Seconds())), 10)
}

// start starts the supervisor.
func (s *supervised) start() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	s.cmd.ExtraFiles = []*os.File{w}
	err = s.cmd.Start()
	_ = w.Close() // the supervisor has its own copy
	if err != nil {
		_ = r.Close()
		return err
	}
	s.status = r
	return nil
}

// finish kills whatever is left of the run's group once the supervisor
// has been waited for, and returns the program's status as the supervisor
// reported it: nil when it did not live to (it was killed).
//
// The group's id is not reused while a member lives, so the signal
// reaches only the run's processes; were none left, the leader's pid
// would have to be reused as a new group's id in the moment since the
// wait, the one hazard of signalling a group.
func (s *supervised) finish() *exitStatus {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	defer s.status.Close()
	// Every writer is dead by now, so the read ends at once; the deadline
	// is for a writer that should not exist.
	_ = s.status.SetReadDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(io.LimitReader(s.status, 16))
	return parseStatus(b)
}

// stopped reports whether the worker asked the supervisor to stop.
func (s *supervised) stopped() bool { return s.cancelled.Load() }
