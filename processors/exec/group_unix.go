//go:build unix

package exec

import (
	"errors"
	"os"
	osexec "os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group, and makes the
// cancellation of its context send SIGTERM to that whole group: killing a
// shell is not killing what it started.
func ownGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			// Nothing left to stop: tell os/exec, so that a program that
			// had already exited 0 is not reported as interrupted.
			return os.ErrProcessDone
		}
		return err
	}
}

// killGroup sends SIGKILL to whatever is left of cmd's process group once
// its leader has been waited for. The group's id is not reused while a
// member lives, so the signal reaches what the command started; were none
// left, the leader's pid would have to be reused as a new group's id in
// the moment since the wait, the one hazard of signalling a group.
func killGroup(cmd *osexec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
