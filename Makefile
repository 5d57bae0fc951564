# rowfate developer tasks. Run `make` or `make help` for the list.
#
# Overridable variables (environment or command line):
#   GO        Go command                      (default: go)
#   GOFMT     gofmt command                   (default: gofmt)
#   PKGS      packages to test/bench/vet      (default: ./...)
#   FUZZTIME  per-target fuzzing time         (default: 60s; make test-long)
#   FUZZSHORT per-target time in make test    (default: 5s)
#   DATABASE_URL  use this PostgreSQL instead of a throwaway local one
#   DURATION  faults of make chaos            (default: 3m)
#   SEED      seed of make chaos              (default: a random one, printed)

GO       ?= go
GOFMT    ?= gofmt
PKGS     ?= ./...
FUZZTIME ?= 60s
FUZZSHORT ?= 5s
DURATION ?= 3m
SEED     ?= 0
ROWS     ?= 200000
# staticcheck's version, run with `go run` so that it is no dependency of
# the module.
STATICCHECK ?= v0.8.2

# The race detector instruments every package we build, except the SQLite
# engine: modernc.org/sqlite/lib and modernc.org/libc are SQLite's C
# translated to Go, run behind one connection at a time, and instrumenting
# every memory access of theirs made the suite ten to forty times slower
# (TestRecalcCancelledAndRerun/sqlite: 245 s with it, 14 s without) while
# it checks nothing of ours. The Go side of the driver (modernc.org/sqlite)
# and all of our code stay instrumented.
RACE := -race -gcflags=modernc.org/sqlite/lib=-race=false -gcflags=modernc.org/libc/...=-race=false

SHELL := /bin/bash
.DEFAULT_GOAL := help

.PHONY: help test test-long test-short bench bench-xlsx bench-compare bench-scale soak fuzz fuzz-short lint build chaos chaos-ci

help: ## Show this list of targets
	@echo 'Usage: make TARGET [GO=go] [FUZZTIME=60s] [DATABASE_URL=...]'
	@echo
	@awk 'BEGIN { FS = ":[^#]*## " } /^[A-Za-z0-9_.-]+:[^#]*## / { printf "  %-11s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

test: ## The whole suite with -race on SQLite and PostgreSQL (throwaway server unless DATABASE_URL is set), at sizes that fit 15 minutes on a busy 2-core machine; then memory bounds, every benchmark once, a fuzz and a chaos smoke run
	@echo "== $$(date +%T) make test: the suite with -race"
	ROWFATE_REQUIRE_POSTGRES=1 scripts/with-postgres.sh scripts/leftovers.sh $(GO) test $(RACE) -count=1 -timeout 30m $(PKGS)
	@# Peak-memory bounds measured on child processes mean nothing under the
	@# race detector's own overhead, so those tests skip with -race: run them here.
	@echo "== $$(date +%T) make test: memory bounds"
	$(GO) test -count=1 -run 'Memory' ./rows/...
	@# Every benchmark once, as a smoke test, so none of them rots.
	@echo "== $$(date +%T) make test: every benchmark once"
	ROWFATE_REQUIRE_POSTGRES=1 scripts/with-postgres.sh $(GO) test -short -count=1 -run '^$$' -bench . -benchtime=1x $(PKGS)
	@echo "== $$(date +%T) make test: fuzz smoke"
	@$(MAKE) --no-print-directory fuzz-short
	@echo "== $$(date +%T) make test: chaos smoke"
	@$(MAKE) --no-print-directory chaos-ci
	@echo "== $$(date +%T) make test: done"

test-long: ## The suite again at full size (ROWFATE_TEST_LONG=1: 10,000-key races, 50-round bootstrap races, long crash tests), FUZZTIME (60s) of fuzzing per target, and a 3-minute chaos run: what .ci/run runs after make test
	ROWFATE_TEST_LONG=1 ROWFATE_REQUIRE_POSTGRES=1 scripts/with-postgres.sh scripts/leftovers.sh $(GO) test $(RACE) -count=1 -timeout 60m $(PKGS)
	@$(MAKE) --no-print-directory fuzz
	scripts/leftovers.sh $(GO) run ./cmd/rowfate-chaos -duration 3m -rows 100000 -seed $(SEED) -settle 3m

chaos: ## Crash-and-fault harness (cmd/rowfate-chaos) on a throwaway PostgreSQL: DURATION of faults (3m), SEED (random, printed), ROWS (200000)
	$(GO) run ./cmd/rowfate-chaos -duration $(DURATION) -seed $(SEED) -rows $(ROWS) -report chaos-report.json

# chaos-ci's settle bound is wide: under a CPU hog a random seed's run took
# 113 s of the 2 minutes it had, all of it rework after 14 crashes.
# One run, of the seed of fixed findings: the random seeds are make
# test-long's (its 3-minute run) and make chaos's. Under the CPU hog the
# random-seed run here took 154 s of make test's 862 s, beside 196 s for
# seed 11.
chaos-ci: ## A short chaos run, seed 11 (the seed of fixed findings, RELIABILITY.md): what make test runs
	scripts/leftovers.sh $(GO) run ./cmd/rowfate-chaos -duration 45s -rows 40000 -batches 10 -seed 11 -settle 4m

fuzz-short: ## Run every Fuzz* target briefly, FUZZSHORT each (default 5s)
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZSHORT)

test-short: ## Quick tests (-short, SQLite only; PostgreSQL not required)
	$(GO) test -short -count=1 $(PKGS)

bench: ## Benchmarks (-count 6, for benchstat) against PostgreSQL; output also saved to bench.out
	set -o pipefail; scripts/with-postgres.sh $(GO) test -run '^$$' -bench . -benchmem -count 6 $(PKGS) | tee bench.out

bench-xlsx: ## Read/write 1,000,000 rows as XLSX and CSV, and export them: rows/s and peak RSS, 3 runs each
	bench/xlsx/run.sh 1000000 3

bench-compare: ## rowfate vs psql \copy, pgloader, a naive loop and River on 1,000,000 rows (needs DATABASE_URL; flags in BENCH_COMPARE_ARGS, see bench/compare/README.md)
	@test -n "$$DATABASE_URL" || { echo 'bench-compare: set DATABASE_URL to the PostgreSQL server to measure'; exit 1; }
	cd bench/compare && ../../scripts/with-postgres.sh $(GO) run . $(BENCH_COMPARE_ARGS)

bench-scale: ## One PostgreSQL at scale (needs DATABASE_URL): a 10M-row batch, 1,000 batches of 100 tenants, 1/2/4 worker processes; reports in bench-scale-*.json
	@test -n "$$DATABASE_URL" || { echo 'bench-scale: set DATABASE_URL to the PostgreSQL server to measure'; exit 1; }
	$(GO) run ./bench/scale -scenario big -rows 10000000 -report bench-scale-big.json
	$(GO) run ./bench/scale -scenario tenants -tenants 100 -batches 1000 -report bench-scale-tenants.json
	$(GO) run ./bench/scale -scenario workers -rows 500000 -procs 1,2,4 -runs 3 -report bench-scale-workers.json

soak: ## batchctl serve under a mixed API load for SOAK (default 30m), sampling memory, goroutines, files, connections (needs DATABASE_URL)
	@test -n "$$DATABASE_URL" || { echo 'soak: set DATABASE_URL to the PostgreSQL server to use'; exit 1; }
	$(GO) run ./bench/soak -duration $(or $(SOAK),30m) -report soak-report.json

fuzz: ## Run every Fuzz* target for FUZZTIME each (default 60s); see scripts/fuzz.sh
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

lint: ## gofmt -l must report nothing, go vet, staticcheck, go.mod tidy, and the packages keep their layers (internal/layout); .ci/run runs it first
	@out=$$($(GOFMT) -l .) || exit 1; \
	if [ -n "$$out" ]; then echo "gofmt: these files need formatting (run gofmt -w):"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) $(PKGS)
	@$(GO) mod tidy -diff || { echo "lint: go.mod or go.sum is not tidy (run go mod tidy)"; exit 1; }
	@n=$$($(GO) list -deps ./store/... | grep -c -e excelize -e validator || true); \
	if [ "$$n" != 0 ]; then echo "lint: the store drivers depend on excelize or validator ($$n packages)"; exit 1; fi
	$(GO) test -count=1 ./internal/layout/

build: ## Compile all packages
	$(GO) build $(PKGS)
