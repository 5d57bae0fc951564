// Package exec is a processor for kinds whose effect is a program: it runs
// one command per row, with the row as JSON on its stdin, and takes the
// row's id from the first line of its stdout.
//
// # The command
//
// Config.Command is run directly, never through a shell, so nothing in a
// row's data is interpreted by one. Its environment is minimal: the
// worker's PATH, Config.Env, and the row:
//
//	ROWFATE_EFFECT_KEY  RowInfo.EffectKey: the same on every attempt and
//	                    after any reclaim; a program with an external effect
//	                    passes it on so that the effect happens once
//	ROWFATE_TENANT      RowInfo.TenantID
//	ROWFATE_BATCH       RowInfo.BatchID
//	ROWFATE_ROW         RowInfo.RowNo
//	ROWFATE_ATTEMPT     RowInfo.Attempt
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
//	exit 64 to 78             batch.Permanent, with the end of stderr: the
//	                          sysexits codes (EX_USAGE to EX_CONFIG, 65 is
//	                          EX_DATAERR) say the row or the setup is wrong,
//	                          which retrying cannot fix.
//	any other exit or signal  retryable, with the end of stderr.
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
// # Stopping
//
// On unix the command runs in its own process group. When ctx is done the
// whole group gets SIGTERM, so that whatever the program started (a shell
// script's children) stops with it; after Config.Grace, the program is
// killed and its output pipes closed, so a grandchild that holds stdout
// open cannot keep Process waiting. When the program has exited or been
// killed, anything still running in its group gets SIGKILL: a row's program
// must not leave work running behind it, finished or not. Elsewhere only
// the program itself is killed.
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
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
)

const (
	defaultMaxOutput = 64 << 10
	defaultGrace     = 2 * time.Second
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
	// Logger receives one debug record per run: the row, the exit code and
	// the duration, never the output. Defaults to a logger that discards.
	Logger *slog.Logger
}

func (c *Config[T]) validate() error {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return errors.New("exec: Config.Command is required")
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
	if c.MaxStdout < 0 || c.MaxStderr < 0 || c.Grace < 0 {
		return errors.New("exec: Config.MaxStdout, MaxStderr and Grace must not be negative")
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

// Processor runs a command per row; see the package documentation for
// what the command gets and how its exit is classified. It is safe for
// concurrent use.
type Processor[T any] struct {
	path      string
	args      []string
	name      string // the program's base name, for messages
	dir       string
	env       []string
	body      func(T) (any, error)
	maxStdout int
	maxStderr int
	grace     time.Duration
	logger    *slog.Logger
}

// New returns a Processor for a validated config.
func New[T any](cfg Config[T]) (*Processor[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	path := cfg.Command[0]
	if !strings.ContainsRune(path, filepath.Separator) && !strings.ContainsRune(path, '/') {
		// Found once, in the worker's PATH: a missing program is a setup
		// error to report at start, not a failure of every row.
		found, err := osexec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("exec: Config.Command: %w", err)
		}
		path = found
	}
	p := &Processor[T]{
		path:      path,
		args:      append([]string(nil), cfg.Command[1:]...),
		name:      filepath.Base(cfg.Command[0]),
		dir:       cfg.Dir,
		env:       baseEnv(cfg.InheritEnv, cfg.Env),
		body:      cfg.BodyFunc,
		maxStdout: cmp.Or(cfg.MaxStdout, defaultMaxOutput),
		maxStderr: cmp.Or(cfg.MaxStderr, defaultMaxOutput),
		grace:     cmp.Or(cfg.Grace, defaultGrace),
		logger:    cfg.Logger,
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	return p, nil
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
	info, ok := batch.RowFrom(ctx)
	if !ok {
		return "", batch.Permanent(fmt.Errorf("run %s: %w", p.name, ErrNoRow))
	}
	if strings.ContainsRune(info.EffectKey, 0) || strings.ContainsRune(info.TenantID, 0) {
		// The key comes from the row's data; it is the same next time.
		return "", batch.Permanent(fmt.Errorf("run %s: the effect key or tenant holds a NUL byte and cannot be passed in the environment", p.name))
	}
	body, err := p.encode(row)
	if err != nil {
		return "", batch.Permanent(fmt.Errorf("run %s: encode row: %w", p.name, err))
	}
	if ctx.Err() != nil {
		return "", p.notStarted(ctx)
	}

	cmd := osexec.CommandContext(ctx, p.path, p.args...)
	cmd.Dir = p.dir
	cmd.Env = append(p.env[:len(p.env):len(p.env)],
		EnvEffectKey+"="+info.EffectKey,
		EnvTenant+"="+info.TenantID,
		EnvBatch+"="+strconv.FormatInt(info.BatchID, 10),
		EnvRow+"="+strconv.FormatInt(info.RowNo, 10),
		EnvAttempt+"="+strconv.Itoa(info.Attempt),
	)
	cmd.Stdin = bytes.NewReader(body)
	stdout := &headBuffer{max: p.maxStdout}
	stderr := &tailBuffer{max: p.maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	ownGroup(cmd)
	// After Grace, os/exec kills the program and closes its pipes, so
	// that Wait returns even when a grandchild holds stdout open.
	cmd.WaitDelay = p.grace

	log := p.logger.With("tenant_id", info.TenantID, "batch_id", info.BatchID, "row_no", info.RowNo, "attempt", info.Attempt)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return "", p.notStarted(ctx)
		}
		log.DebugContext(ctx, "exec could not start", "err", err)
		return "", fmt.Errorf("run %s: start: %w", p.name, err)
	}
	waitErr := cmd.Wait()
	killGroup(cmd)
	log.DebugContext(ctx, "exec", "exit_code", cmd.ProcessState.ExitCode(), "duration", time.Since(start))
	return p.outcome(ctx, waitErr, stdout, stderr)
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

// notStarted is the error for a run given up before the program started:
// a cancelled ctx is returned as is; a deadline that passed before the
// start is retryable, since nothing can have happened.
func (p *Processor[T]) notStarted(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("run %s: %w", p.name, ctx.Err())
	}
	// %v, not %w: wrapping the deadline would make the row unknown.
	return fmt.Errorf("run %s: deadline passed before the program started, safe to retry: %v", p.name, ctx.Err())
}

// outcome classifies a finished run.
func (p *Processor[T]) outcome(ctx context.Context, waitErr error, stdout *headBuffer, stderr *tailBuffer) (string, error) {
	switch {
	case waitErr == nil:
		return p.id(stdout)
	case ctx.Err() != nil:
		// The program was stopped because ctx was done, even if it
		// reported something on its way out.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("run %s: killed at the deadline, its effect may have happened: %w%s", p.name, context.DeadlineExceeded, suffix(stderr.excerpt()))
		}
		return "", fmt.Errorf("run %s: %w", p.name, ctx.Err())
	case errors.Is(waitErr, osexec.ErrWaitDelay):
		// It exited 0, but something it started held its output open
		// past Grace: what it printed before is its answer.
		return p.id(stdout)
	}
	var ee *osexec.ExitError
	if !errors.As(waitErr, &ee) {
		// Copying its output failed: nothing says what it did.
		return "", fmt.Errorf("run %s: %w", p.name, waitErr)
	}
	xerr := &ExitError{Code: ee.ExitCode(), State: ee.String(), Stderr: stderr.excerpt()}
	if xerr.Code >= 64 && xerr.Code <= 78 {
		return "", batch.Permanent(fmt.Errorf("run %s: %w", p.name, xerr))
	}
	return "", fmt.Errorf("run %s: %w", p.name, xerr)
}

// id returns the first line of stdout, trimmed.
func (p *Processor[T]) id(stdout *headBuffer) (string, error) {
	line, _, found := bytes.Cut(stdout.buf, []byte("\n"))
	if !found && stdout.dropped {
		return "", batch.Permanent(fmt.Errorf("run %s: exit 0, but the first line of stdout is longer than %d bytes", p.name, p.maxStdout))
	}
	id := strings.TrimSpace(strings.ToValidUTF8(string(line), "\uFFFD"))
	if id == "" {
		return "", batch.Permanent(fmt.Errorf("run %s: exit 0, but no id on the first line of stdout", p.name))
	}
	return id, nil
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
