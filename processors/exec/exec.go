// Package exec is a processor for kinds whose effect is a program: it runs
// one command per row, with the row as JSON on its stdin, and takes the
// row's id from the first line of its stdout.
//
// # The command
//
// Config.Command is run without interpreting a row's data: the program and
// its arguments are passed as they are, and the row travels on stdin. Its
// environment is minimal: the worker's PATH, Config.Env, and the row:
//
//	ROWFATE_EFFECT_KEY  RowInfo.EffectKey: the same on every attempt and
//	                    after any reclaim; a program with an external effect
//	                    passes it on so that the effect happens once
//	ROWFATE_TENANT      RowInfo.TenantID
//	ROWFATE_BATCH       RowInfo.BatchID
//	ROWFATE_ROW         RowInfo.RowNo
//	ROWFATE_ATTEMPT     RowInfo.Attempt
//	ROWFATE_EXEC_RUN    a token naming this run, by which a later worker
//	                    finds what a dead one left running (see Stopping)
//
// The rest of the worker's environment (a database URL, cloud credentials)
// is not passed unless Config.InheritEnv says so. A context without a
// batch.RowInfo runs nothing: Process returns a permanent error matching
// ErrNoRow.
//
// # Outcomes
//
//	exit 0                    success: the id is stdout's first line,
//	                          trimmed. An empty one is a permanent error
//	                          (the program broke its contract).
//	exit 75 (EX_TEMPFAIL)     retryable, and batch.NotApplied: the program
//	                          says its call did nothing (the downstream
//	                          turned it away, a 503), so a keyed row whose
//	                          retries end on it is dead, or cancelled.
//	exit 64 to 78             batch.Permanent, with the end of stderr: the
//	                          other sysexits codes (EX_USAGE to EX_CONFIG,
//	                          65 is EX_DATAERR) say the row or the setup is
//	                          wrong, which retrying cannot fix.
//	any other exit or signal  retryable, with the end of stderr. Nothing
//	                          says the effect did not happen (a program
//	                          whose own call timed out exits 1 too), so a
//	                          keyed row whose retries end on it is unknown.
//	ctx's deadline passed     an error wrapping context.DeadlineExceeded:
//	                          the row is unknown, since the program may have
//	                          done its effect before it was killed.
//	ctx cancelled             ctx's error (context.Canceled): the engine
//	                          stopped the work (shutdown, lost lease, batch
//	                          cancelled) and records nothing.
//	could not start           retryable (a missing program, too many
//	                          processes), unless ctx was already done.
//
// Every exit error is an *ExitError (wrapped), which carries the exit code
// and the end of stderr.
//
// # Reconciling
//
// With Config.ReconcileCommand, Reconcile (a Kind.ReconcileFunc) asks about
// a row whose outcome is unknown. The reconcile program gets the row as the
// row's program does (stdin, environment, ROWFATE_EFFECT_KEY above all) and
// answers:
//
//	exit 0, an id on the first    the effect happened: the row succeeded
//	line of stdout                with that id.
//	exit 79 (ExitNotApplied)      the effect did not happen and cannot any
//	                              more: the row failed for good.
//	anything else                 it cannot tell yet: the row stays unknown.
//
// # Stopping
//
// A row's program, and everything it starts, must not outlive its worker
// nor run past its deadline: a late effect lands after the row was
// cancelled or reconciled, and happens twice when the row is worked again.
// On unix each run has its own process group, led by a small /bin/sh
// supervisor that starts the program in it and stays until the program
// ends:
//
//   - when ctx is done, the worker asks the supervisor to stop the run: the
//     whole group gets SIGTERM, and SIGKILL after Config.Grace;
//   - the supervisor does the same by itself at the run's deadline (ctx's,
//     or Config.Timeout) however the worker fares, so a worker that is
//     stopped (SIGSTOP, a frozen machine) still leaves nothing running
//     past its deadline and grace;
//   - on Linux, the supervisor gets SIGTERM when its worker dies, even by
//     SIGKILL (the parent-death signal), and kills the group at once;
//   - when the program exits, whatever it left in its group is killed:
//     a row's program must not leave work running behind it.
//
// And on Linux each run is recorded in Config.StateDir while it runs: New
// kills the runs recorded there whose worker is gone, should any of their
// processes have survived it (a supervisor killed first, say). A process
// that leaves the group (setsid) or clears its environment escapes all
// of this.
//
// At most Config.MaxStdout bytes of stdout (the start) and Config.MaxStderr
// bytes of stderr (the end) are kept; the rest is read and dropped, so a
// chatty program neither fills the worker's memory nor blocks on a full
// pipe. Neither is ever logged.
package exec

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rowfate/rowfate/batch"
)

// The variables that tell the command which row it works.
const (
	EnvEffectKey = "ROWFATE_EFFECT_KEY"
	EnvTenant    = "ROWFATE_TENANT"
	EnvBatch     = "ROWFATE_BATCH"
	EnvRow       = "ROWFATE_ROW"
	EnvAttempt   = "ROWFATE_ATTEMPT"
	// EnvRun names the run: every process of the run inherits it, which is
	// how New tells a dead worker's leftovers from anyone else's processes.
	EnvRun = "ROWFATE_EXEC_RUN"
)

// ExitTempFail is the exit code (sysexits' EX_TEMPFAIL) by which a row's
// program says its call failed for now and did nothing: the row is
// retried, and when its retries end, it is dead (or cancelled), not
// unknown (batch.NotApplied). Any other failure may have had its effect.
const ExitTempFail = 75

// ExitNotApplied is the exit code by which Config.ReconcileCommand says
// that a row's effect did not happen and cannot happen any more: the row
// is failed for good. It is outside the sysexits range (64 to 78), so that
// a reconcile program that breaks on its own setup is never taken for an
// answer.
const ExitNotApplied = 79

const (
	defaultMaxOutput = 64 << 10
	defaultGrace     = 2 * time.Second
	defaultTimeout   = 30 * time.Second
	// defaultPath is the command's PATH when the worker has none.
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
	// maxExcerpt bounds the part of stderr put in the row's error.
	maxExcerpt = 512
)

// ErrNoRow is returned, marked permanent, when Process is called with a
// context that carries no batch.RowInfo: the engine always provides one,
// and a test builds one with batch.ContextWithRow.
var ErrNoRow = errors.New("no row in the context (batch.RowInfo)")

// Config configures a Processor.
type Config[T any] struct {
	// Command is the program and its arguments. A program named without a
	// slash is looked up in PATH when New is called. Required.
	Command []string
	// ReconcileCommand is the program Reconcile runs for a row whose
	// outcome is unknown (see the package documentation), looked up like
	// Command. Optional: without it, Reconcile answers that it cannot
	// tell.
	ReconcileCommand []string
	// Dir is the command's working directory. Defaults to the worker's.
	Dir string
	// Env adds "KEY=value" entries to the command's environment, which
	// otherwise holds only PATH (the worker's, or /usr/local/bin:/usr/bin:/bin)
	// and the ROWFATE_ variables; an entry for PATH replaces it. It must not
	// set ROWFATE_ variables. Optional.
	Env []string
	// InheritEnv passes the worker's whole environment to the command, under
	// Env and the ROWFATE_ variables. Defaults to false: the worker's
	// environment holds its own secrets, which a row's program has no use
	// for.
	InheritEnv bool
	// BodyFunc shapes a row into the value written as JSON on stdin.
	// Defaults to the row itself.
	BodyFunc func(T) (any, error)
	// MaxStdout bounds the start of stdout that is kept. Defaults to 64 KiB.
	MaxStdout int
	// MaxStderr bounds the end of stderr that is kept. Defaults to 64 KiB.
	MaxStderr int
	// Grace is how long the command's process group has to exit after
	// SIGTERM before it is killed. Defaults to 2s.
	Grace time.Duration
	// Timeout bounds a run whose context has no deadline: a Reconcile, or
	// a call from outside the engine. The engine gives every Process call
	// the kind's Timeout, which then decides. Defaults to 30s.
	Timeout time.Duration
	// StateDir is where each run is recorded while it runs (Linux only),
	// so that New can kill what a dead worker's runs left behind. Workers
	// of one user on one machine may share it: only runs whose worker is
	// gone are touched. It must be writable by this user alone. Defaults
	// to $XDG_RUNTIME_DIR/rowfate-exec, or rowfate-exec-<uid> in
	// os.TempDir().
	StateDir string
	// Logger receives one debug record per run: the row, the exit code and
	// the duration, never the output. Defaults to a logger that discards.
	Logger *slog.Logger
}

func (c *Config[T]) validate() error {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return errors.New("exec: Config.Command is required")
	}
	if len(c.ReconcileCommand) > 0 && c.ReconcileCommand[0] == "" {
		return errors.New("exec: Config.ReconcileCommand has an empty program")
	}
	for i, kv := range c.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			// The entry may hold a secret: name its place only.
			return fmt.Errorf("exec: Config.Env[%d] is not KEY=value", i)
		}
		if strings.HasPrefix(name, "ROWFATE_") {
			return fmt.Errorf("exec: Config.Env must not set %s: the processor sets the ROWFATE_ variables", name)
		}
	}
	if c.MaxStdout < 0 || c.MaxStderr < 0 || c.Grace < 0 || c.Timeout < 0 {
		return errors.New("exec: Config.MaxStdout, MaxStderr, Grace and Timeout must not be negative")
	}
	if c.Dir != "" {
		fi, err := os.Stat(c.Dir)
		if err != nil {
			return fmt.Errorf("exec: Config.Dir: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("exec: Config.Dir %s is not a directory", c.Dir)
		}
	}
	return nil
}

// program is a resolved command: the row's, or the reconcile one.
type program struct {
	path string
	args []string
	name string // the program's base name, for messages
}

// resolve finds a program named without a slash in the worker's PATH,
// once: a missing program is a setup error to report at start, not a
// failure of every row.
func resolve(field string, command []string) (program, error) {
	path := command[0]
	if !strings.ContainsRune(path, filepath.Separator) && !strings.ContainsRune(path, '/') {
		found, err := osexec.LookPath(path)
		if err != nil {
			return program{}, fmt.Errorf("exec: Config.%s: %w", field, err)
		}
		path = found
	}
	return program{path: path, args: append([]string(nil), command[1:]...), name: filepath.Base(command[0])}, nil
}

// Processor runs a command per row; see the package documentation for
// what the command gets and how its exit is classified. It is safe for
// concurrent use.
type Processor[T any] struct {
	run       program
	reconcile *program
	dir       string
	env       []string
	body      func(T) (any, error)
	maxStdout int
	maxStderr int
	grace     time.Duration
	timeout   time.Duration
	runs      *runDir
	logger    *slog.Logger
}

// New returns a Processor for a validated config. On Linux it first kills
// what the runs recorded in Config.StateDir by workers that are gone left
// running.
func New[T any](cfg Config[T]) (*Processor[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	run, err := resolve("Command", cfg.Command)
	if err != nil {
		return nil, err
	}
	p := &Processor[T]{
		run:       run,
		dir:       cfg.Dir,
		env:       baseEnv(cfg.InheritEnv, cfg.Env),
		body:      cfg.BodyFunc,
		maxStdout: cmp.Or(cfg.MaxStdout, defaultMaxOutput),
		maxStderr: cmp.Or(cfg.MaxStderr, defaultMaxOutput),
		grace:     cmp.Or(cfg.Grace, defaultGrace),
		timeout:   cmp.Or(cfg.Timeout, defaultTimeout),
		logger:    cfg.Logger,
	}
	if len(cfg.ReconcileCommand) > 0 {
		rec, err := resolve("ReconcileCommand", cfg.ReconcileCommand)
		if err != nil {
			return nil, err
		}
		p.reconcile = &rec
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.runs, err = openRunDir(cmp.Or(cfg.StateDir, defaultStateDir())); err != nil {
		return nil, err
	}
	if err := p.runs.reap(p.logger); err != nil {
		return nil, err
	}
	return p, nil
}

// defaultStateDir is Config.StateDir's default: the user's runtime
// directory, else one of the user's own in the temporary directory.
func defaultStateDir() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "rowfate-exec")
	}
	return filepath.Join(os.TempDir(), "rowfate-exec-"+strconv.Itoa(os.Geteuid()))
}

// baseEnv is the command's environment before the row's variables.
func baseEnv(inherit bool, extra []string) []string {
	var env []string
	if inherit {
		env = os.Environ()
	} else {
		path := os.Getenv("PATH")
		if path == "" {
			path = defaultPath
		}
		env = []string{"PATH=" + path}
	}
	// os/exec keeps the last of duplicate keys, so Env overrides.
	return append(env, extra...)
}

// Process runs the command for row and returns the id it printed.
func (p *Processor[T]) Process(ctx context.Context, row T) (string, error) {
	info, body, err := p.prepare(ctx, p.run, row)
	if err != nil {
		return "", batch.Permanent(err)
	}
	r, err := p.start(ctx, p.run, info, body)
	if err != nil {
		return "", err
	}
	switch {
	case r.succeeded():
		return p.id(p.run, r.stdout)
	case r.ctxErr != nil:
		// The program was stopped because ctx was done, even if it
		// reported something on its way out.
		if errors.Is(r.ctxErr, context.DeadlineExceeded) {
			return "", fmt.Errorf("run %s: killed at the deadline, its effect may have happened: %w%s", p.run.name, context.DeadlineExceeded, suffix(r.stderr.excerpt()))
		}
		return "", fmt.Errorf("run %s: %w", p.run.name, r.ctxErr)
	}
	xerr, err := r.exitError()
	if err != nil {
		// Copying its output failed: nothing says what it did.
		return "", fmt.Errorf("run %s: %w", p.run.name, err)
	}
	switch {
	case xerr.Code == ExitTempFail:
		return "", batch.NotApplied(fmt.Errorf("run %s: %w", p.run.name, xerr))
	case xerr.Code >= 64 && xerr.Code <= 78:
		return "", batch.Permanent(fmt.Errorf("run %s: %w", p.run.name, xerr))
	}
	return "", fmt.Errorf("run %s: %w", p.run.name, xerr)
}

// Reconcile runs Config.ReconcileCommand for a row whose outcome is
// unknown, and returns the row's id when its effect happened, an error
// marked batch.Permanent when the program answered ExitNotApplied, or
// another error when it cannot tell (the row stays unknown). Its signature
// is Kind.ReconcileFunc's.
func (p *Processor[T]) Reconcile(ctx context.Context, row T) (string, error) {
	if p.reconcile == nil {
		return "", errors.New("reconcile: exec: no Config.ReconcileCommand")
	}
	rec := *p.reconcile
	info, body, err := p.prepare(ctx, rec, row)
	if err != nil {
		// Not permanent: only the program's answer may fail a row.
		return "", err
	}
	r, err := p.start(ctx, rec, info, body)
	switch {
	case err != nil:
		return "", fmt.Errorf("reconcile: %w", err)
	case r.succeeded():
		id, err := p.id(rec, r.stdout)
		if err != nil {
			return "", fmt.Errorf("reconcile: %s", err) // %s: unknown, not permanent
		}
		return id, nil
	case r.ctxErr != nil:
		return "", fmt.Errorf("reconcile %s: %w", rec.name, r.ctxErr)
	}
	xerr, err := r.exitError()
	if err != nil {
		return "", fmt.Errorf("reconcile %s: %w", rec.name, err)
	}
	if xerr.Code == ExitNotApplied {
		return "", batch.Permanent(fmt.Errorf("reconcile %s: the effect did not happen: %w", rec.name, xerr))
	}
	return "", fmt.Errorf("reconcile %s: cannot tell: %w", rec.name, xerr)
}

// prepare checks a call's row information and encodes the row for stdin.
// Its errors are the same on every attempt.
func (p *Processor[T]) prepare(ctx context.Context, prog program, row T) (batch.RowInfo, []byte, error) {
	info, ok := batch.RowFrom(ctx)
	if !ok {
		return info, nil, fmt.Errorf("run %s: %w", prog.name, ErrNoRow)
	}
	if strings.ContainsRune(info.EffectKey, 0) || strings.ContainsRune(info.TenantID, 0) {
		// The key comes from the row's data; it is the same next time.
		return info, nil, fmt.Errorf("run %s: the effect key or tenant holds a NUL byte and cannot be passed in the environment", prog.name)
	}
	body, err := p.encode(row)
	if err != nil {
		return info, nil, fmt.Errorf("run %s: encode row: %w", prog.name, err)
	}
	return info, body, nil
}

// encode returns the JSON for stdin, shaped by BodyFunc when set.
func (p *Processor[T]) encode(row T) ([]byte, error) {
	var v any = row
	if p.body != nil {
		var err error
		if v, err = p.body(row); err != nil {
			return nil, err
		}
	}
	return json.Marshal(v)
}

// result is how a run ended.
type result struct {
	// status is the program's own exit status, as its supervisor saw it;
	// nil when the supervisor did not live to say (or there is none).
	status *exitStatus
	// waitErr is what waiting for the supervisor (or the program, where
	// there is none) returned.
	waitErr error
	// ctxErr is the run's context's error when the worker stopped the run
	// or the context was done when it ended; nil otherwise.
	ctxErr error
	stdout *headBuffer
	stderr *tailBuffer
}

// succeeded reports whether the program exited 0 by itself, before the
// worker asked it to stop.
func (r *result) succeeded() bool {
	if r.status != nil {
		return r.status.code == 0 && r.ctxErr == nil
	}
	// No supervisor: os/exec reports a stop of the worker's as ctx's
	// error, and a program that exited 0 with its output held open past
	// Grace as ErrWaitDelay.
	return r.waitErr == nil || errors.Is(r.waitErr, osexec.ErrWaitDelay) && r.ctxErr == nil
}

// exitError describes a run that did not succeed, or returns the error
// that says nothing about how the program ended.
func (r *result) exitError() (*ExitError, error) {
	if r.status != nil {
		return &ExitError{Code: r.status.code, State: r.status.String(), Stderr: r.stderr.excerpt()}, nil
	}
	var ee *osexec.ExitError
	if !errors.As(r.waitErr, &ee) {
		return nil, r.waitErr
	}
	return &ExitError{Code: ee.ExitCode(), State: ee.String(), Stderr: r.stderr.excerpt()}, nil
}

// exitStatus is a program's exit as a shell reports it: the exit code, or
// 128 plus the signal that ended it.
type exitStatus struct {
	code   int // -1 for a signal
	signal string
	raw    int
}

// parseStatus reads the status the supervisor reported.
func parseStatus(b []byte) *exitStatus {
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 255 {
		return nil
	}
	if n > 128 {
		// A shell cannot tell a program killed by signal N from one that
		// exited 128+N; the signal is by far the likelier.
		return &exitStatus{code: -1, signal: signalName(n - 128), raw: n}
	}
	return &exitStatus{code: n, raw: n}
}

// signalName names a signal as os/exec does ("killed").
func signalName(n int) string { return syscall.Signal(n).String() }

// String says how the program ended, as os/exec does.
func (s *exitStatus) String() string {
	if s.code < 0 {
		return "signal: " + s.signal
	}
	return "exit status " + strconv.Itoa(s.code)
}

// start runs prog for one row under its supervisor and waits for the run
// to end. Its error is for a run that did not start.
func (p *Processor[T]) start(ctx context.Context, prog program, info batch.RowInfo, body []byte) (*result, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	if ctx.Err() != nil || left <= 0 {
		return nil, p.notStarted(ctx, prog)
	}
	token, err := newToken()
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", prog.name, err)
	}
	s := newSupervised(ctx, prog, left, p.grace)
	cmd := s.cmd
	cmd.Dir = p.dir
	cmd.Env = append(p.env[:len(p.env):len(p.env)],
		EnvEffectKey+"="+info.EffectKey,
		EnvTenant+"="+info.TenantID,
		EnvBatch+"="+strconv.FormatInt(info.BatchID, 10),
		EnvRow+"="+strconv.FormatInt(info.RowNo, 10),
		EnvAttempt+"="+strconv.Itoa(info.Attempt),
		EnvRun+"="+token,
	)
	cmd.Stdin = bytes.NewReader(body)
	stdout := &headBuffer{max: p.maxStdout}
	stderr := &tailBuffer{max: p.maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Once the run ends, os/exec waits this long for the output pipes to
	// close: only a process that left the group can hold them so long.
	cmd.WaitDelay = p.grace

	// The record comes first: a worker that dies once the program has
	// started must leave a trace for the next one.
	if err := p.runs.record(token); err != nil {
		return nil, fmt.Errorf("run %s: %w", prog.name, err)
	}
	defer p.runs.remove(token)

	log := p.logger.With("tenant_id", info.TenantID, "batch_id", info.BatchID, "row_no", info.RowNo, "attempt", info.Attempt, "program", prog.name)
	begin := time.Now()
	// The parent-death signal follows the thread that forked, not the
	// process (golang/go#27505): the thread must live as long as the run.
	unlock := lockThread()
	defer unlock()
	if err := s.start(); err != nil {
		if ctx.Err() != nil {
			return nil, p.notStarted(ctx, prog)
		}
		log.DebugContext(ctx, "exec could not start", "err", err)
		return nil, fmt.Errorf("run %s: start: %w", prog.name, err)
	}
	r := &result{stdout: stdout, stderr: stderr}
	r.waitErr = cmd.Wait()
	r.status = s.finish()
	// A run the worker stopped, or one that failed once ctx was done
	// (the supervisor's own deadline, say), ended because of ctx.
	if s.stopped() || ctx.Err() != nil && (r.status == nil || r.status.code != 0) {
		r.ctxErr = ctx.Err()
	}
	code := cmd.ProcessState.ExitCode()
	if r.status != nil {
		code = r.status.code
	}
	log.DebugContext(ctx, "exec", "exit_code", code, "duration", time.Since(begin))
	return r, nil
}

// newToken returns a run's token, for EnvRun.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("run token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// notStarted is the error for a run given up before the program started:
// a cancelled ctx is returned as is; a deadline that passed before the
// start is retryable, since nothing can have happened.
func (p *Processor[T]) notStarted(ctx context.Context, prog program) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("run %s: %w", prog.name, ctx.Err())
	}
	// %v, not %w: wrapping the deadline would make the row unknown.
	return fmt.Errorf("run %s: deadline passed before the program started, safe to retry: %v", prog.name, context.DeadlineExceeded)
}

// id returns the first line of stdout, trimmed.
func (p *Processor[T]) id(prog program, stdout *headBuffer) (string, error) {
	line, _, found := bytes.Cut(stdout.buf, []byte("\n"))
	if !found && stdout.dropped {
		return "", batch.Permanent(fmt.Errorf("run %s: exit 0, but the first line of stdout is longer than %d bytes", prog.name, p.maxStdout))
	}
	id := strings.TrimSpace(strings.ToValidUTF8(string(line), "\uFFFD"))
	if id == "" {
		return "", batch.Permanent(fmt.Errorf("run %s: exit 0, but no id on the first line of stdout", prog.name))
	}
	return id, nil
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
