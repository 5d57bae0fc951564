package exec

import (
	"runtime"
	"syscall"
)

// sysProcAttr puts the supervisor in a process group of its own, and has
// the kernel send it SIGTERM when its worker dies, however it dies: the
// supervisor then kills the group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// lockThread keeps the calling goroutine on its OS thread until the
// returned function is called. Linux sends the parent-death signal when
// the thread that forked the child exits, not the process; Go ends a
// thread when a goroutine locked to it returns without unlocking, and
// may do so at other times in future, so the run holds its thread
// (golang/go#27505).
func lockThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
