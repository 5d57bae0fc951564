package batchctl

import (
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/internal/testdb"
)

// pgSession returns a cli on a fresh PostgreSQL schema of DATABASE_URL:
// every connection the CLI opens uses the test's schema, dropped with it.
// It skips without DATABASE_URL, and fails under ROWFATE_REQUIRE_POSTGRES=1.
func pgSession(t *testing.T) *session {
	t.Helper()
	s, _ := pgSessionConfig(t)
	return s
}

// pgSessionConfig is pgSession with the pool configuration of its schema.
func pgSessionConfig(t *testing.T) (*session, *pgxpool.Config) {
	t.Helper()
	cfg := testdb.PostgresSchema(t)
	schema := cfg.ConnConfig.RuntimeParams["search_path"]
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatalf("parse DATABASE_URL: %v", err)
	}
	// pgx sends query parameters it does not know as runtime parameters.
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return &session{t: t, database: u.String()}, cfg
}

// bothStores runs fn as a subtest on a fresh SQLite file and on a fresh
// PostgreSQL schema, in parallel.
func bothStores(t *testing.T, fn func(t *testing.T, s *session)) {
	t.Helper()
	for _, name := range []string{"SQLite", "PostgreSQL"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := setup(t)
			if name == "PostgreSQL" {
				s = pgSession(t)
			}
			fn(t, s)
		})
	}
}

// TestPgSchemaEnv: $ROWFATE_PG_SCHEMA names the PostgreSQL schema of the
// engine's tables when --pg-schema does not. Not parallel: it sets the
// environment of the process.
func TestPgSchemaEnv(t *testing.T) {
	url := testdb.PostgresURL(t)
	schema := testdb.PostgresSchemaName(t)
	t.Setenv("ROWFATE_PG_SCHEMA", schema)
	if r := run(t, "migrate", "--database", url); r.code != exitOK {
		t.Fatalf("migrate: %s", r)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'batches'`, schema).Scan(&n); err != nil || n != 1 {
		t.Errorf("the batches table in %s: %d, %v", schema, n, err)
	}
}
