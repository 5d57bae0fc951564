//go:build !unix

package exec

import osexec "os/exec"

// ownGroup leaves cmd as os/exec makes it: without process groups,
// cancelling its context kills the program itself, not what it started.
func ownGroup(*osexec.Cmd) {}

// killGroup has no group to kill.
func killGroup(*osexec.Cmd) {}
