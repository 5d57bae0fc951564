//go:build unix && !linux

package exec

import "syscall"

// sysProcAttr puts the supervisor in a process group of its own. There is
// no parent-death signal here: a run outlives a worker that dies, until
// the supervisor's deadline.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// lockThread has nothing to hold without a parent-death signal.
func lockThread() (unlock func()) { return func() {} }
