package exec

import (
	"strings"
	"unicode"
)

// ExitError is a run that ended with a non-zero exit or a signal. Process
// returns it wrapped, and marked batch.Permanent for the sysexits codes 64
// to 78, so a caller reads the code with errors.As.
type ExitError struct {
	// Code is the exit code; -1 when a signal ended the program.
	Code int
	// State says how the program ended, as os/exec does ("exit status 1",
	// "signal: killed").
	State string
	// Stderr is the end of the program's stderr, at most 512 bytes, with
	// control characters blanked: for the row's error message, so that it
	// says what the program said.
	Stderr string
}

// Error says how the program ended, the sysexits name of its code, and
// the end of its stderr.
func (e *ExitError) Error() string {
	s := e.State
	if name := sysexit(e.Code); name != "" {
		s += " (" + name + ")"
	}
	return s + suffix(e.Stderr)
}

// sysexit names the sysexits.h codes, which a program uses to say that
// retrying will not help.
func sysexit(code int) string {
	names := [...]string{"EX_USAGE", "EX_DATAERR", "EX_NOINPUT", "EX_NOUSER", "EX_NOHOST",
		"EX_UNAVAILABLE", "EX_SOFTWARE", "EX_OSERR", "EX_OSFILE", "EX_CANTCREAT",
		"EX_IOERR", "EX_TEMPFAIL", "EX_PROTOCOL", "EX_NOPERM", "EX_CONFIG"}
	if code < 64 || code > 78 {
		return ""
	}
	return names[code-64]
}

// headBuffer keeps the first max bytes written to it and drops the rest,
// without ever failing a write: a program whose output is dropped must
// not block on a full pipe or die of a broken one.
type headBuffer struct {
	max     int
	buf     []byte
	dropped bool
}

func (b *headBuffer) Write(p []byte) (int, error) {
	n := min(len(p), b.max-len(b.buf))
	b.buf = append(b.buf, p[:n]...)
	if n < len(p) {
		b.dropped = true
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it: the end of stderr is
// where a program says why it stopped.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = b.buf[:copy(b.buf, b.buf[over:])]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// excerpt returns the last maxExcerpt bytes kept, as valid UTF-8 on one
// line, for an error message.
func (b *tailBuffer) excerpt() string {
	s := b.buf
	if len(s) > maxExcerpt {
		s = s[len(s)-maxExcerpt:]
	}
	out := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(s), "\uFFFD"))
	return strings.TrimSpace(out)
}
