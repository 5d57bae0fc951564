package batch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"
)

// DefaultTenant owns batches whose caller names no tenant.
const DefaultTenant = "default"

// Config configures an Engine. The zero value of every field but Store and
// Registry is usable.
type Config struct {
	// Store is the durable truth. Required.
	Store Store
	// Registry holds the kinds. Required.
	Registry *Registry
	// Logger receives the engine's logs. Defaults to a logger that
	// discards.
	Logger *slog.Logger
	// WorkerName identifies this process's workers; a per-boot random
	// suffix is added so that two processes with the same name never share
	// an identity. Defaults to the host name.
	WorkerName string
	// LeaseDuration is how long a chunk lease lasts without renewal; workers
	// renew it every third of that. Defaults to 30s.
	LeaseDuration time.Duration
	// PollInterval is how long an idle worker waits before claiming again.
	// Defaults to 250ms.
	PollInterval time.Duration
	// StopCheckInterval is how often a worker holding a lease reads
	// whether its batch was cancelled or paused (and the lease still
	// holds), between renewals: how soon it stops starting rows after a
	// cancel or a pause. Defaults to 500ms.
	StopCheckInterval time.Duration
	// Observer hears of claims, lost leases, refused flushes and recorded
	// outcomes (metrics). Defaults to none.
	Observer Observer
}

func (c *Config) validate() error {
	if c.Store == nil {
		return errors.New("batch: Config.Store is required")
	}
	if c.Registry == nil {
		return errors.New("batch: Config.Registry is required")
	}
	return nil
}

// Engine ingests sources and works their rows. It is safe for concurrent
// use.
type Engine struct {
	store    Store
	registry *Registry
	logger   *slog.Logger
	owner    string
	lease    time.Duration
	poll     time.Duration
	// stopCheck is Config.StopCheckInterval.
	stopCheck time.Duration
	observer  Observer
	// bell wakes this engine's idle workers when it imports rows.
	bell bell
	// keyFilterRows, when above 0, sizes an import's key filter instead
	// of the file's row count: tests saturate it to make every row a
	// suspect.
	keyFilterRows int64
	// maxHeld, when above 0, bounds the bytes of the suspects an inline
	// import holds for the store instead of maxHeld: tests make the store
	// read them back.
	maxHeld int
}

// NewEngine returns an engine for a validated config.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{store: cfg.Store, registry: cfg.Registry, logger: cfg.Logger, lease: cfg.LeaseDuration, poll: cfg.PollInterval, stopCheck: cfg.StopCheckInterval}
	if e.logger == nil {
		e.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.lease <= 0 {
		e.lease = 30 * time.Second
	}
	if e.poll <= 0 {
		e.poll = 250 * time.Millisecond
	}
	if e.stopCheck <= 0 {
		e.stopCheck = 500 * time.Millisecond
	}
	e.observer = cfg.Observer
	if e.observer == nil {
		e.observer = nopObserver{}
	}
	name := cfg.WorkerName
	if name == "" {
		name, _ = os.Hostname()
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	e.owner = name + "/" + hex.EncodeToString(b[:])
	return e, nil
}

// Owner returns this engine's worker identity: its name plus a per-boot id.
func (e *Engine) Owner() string { return e.owner }

// Registry returns the engine's kinds.
func (e *Engine) Registry() *Registry { return e.registry }
