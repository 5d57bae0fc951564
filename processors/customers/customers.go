// Package customers is the demo kind used by the fixtures and the README:
// customer rows (email, name, country, signup date, amount) upserted into a
// customers table in the engine's own database, keyed by email.
//
// The upsert is idempotent by its key, so running a row twice (after a lost
// lease) converges on the same customer: the kind needs no effect key.
//
// Country and amount are optional: a file without those columns, or with an
// empty cell in them, leaves the stored value alone (a new customer gets
// NULL), so an import never overwrites data the file did not mention.
package customers

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// Name is the kind's registered name.
const Name = "customers"

// Customer is one row of a customers file.
type Customer struct {
	Email      string                      `col:"email,alias=e-mail|mail|email address" validate:"required,email,max=254"`
	Name       string                      `col:"name,alias=full name|customer name" validate:"required,max=200"`
	Country    rows.Optional[string]       `col:"country,alias=country code,upper" validate:"omitempty,iso3166_1_alpha2"`
	SignupDate time.Time                   `col:"signup_date,alias=signup date|signed up" layout:"2006-01-02|2006-01-02T15:04:05Z07:00" validate:"required"`
	Amount     rows.Optional[rows.Decimal] `col:"amount" validate:"omitempty,gte=0"`
}

// ValidateAmount keeps amounts to cents: the column is numeric(18,2), and a
// third decimal would be rounded away without a word.
func (c *Customer) ValidateAmount(context.Context) error {
	a := c.Amount.Value
	if c.Amount.Set && a.Scale() > 2 && a.Cmp(rows.NewDecimal(0, 0)) != 0 {
		trimmed := strings.TrimRight(a.String(), "0")
		if i := strings.IndexByte(trimmed, '.'); i >= 0 && len(trimmed)-i-1 > 2 {
			return &rows.FieldError{Code: "too_many_decimals", Message: "must have at most 2 decimal places"}
		}
	}
	return nil
}

// ValidateName is found by convention and run after the declarative tags.
func (c *Customer) ValidateName(context.Context) error {
	if strings.ContainsAny(c.Name, "<>") {
		return &rows.FieldError{Code: "forbidden_characters", Message: "must not contain < or >"}
	}
	return nil
}

// earliestSignup bounds signup dates: the shop did not exist before.
var earliestSignup = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ValidateRow is the cross-field hook.
func (c *Customer) ValidateRow(context.Context) error {
	var errs rows.FieldErrors
	if !c.SignupDate.IsZero() && c.SignupDate.Before(earliestSignup) {
		errs = append(errs, rows.FieldError{Field: "SignupDate", Code: "too_early", Message: "must be on or after 2000-01-01"})
	}
	if c.Amount.Set && c.Amount.Value.Sign() > 0 && !c.Country.Set {
		errs = append(errs, rows.FieldError{Field: "Country", Code: "required_with_amount", Message: "is required when amount is above 0"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Dialect selects the SQL flavour of the customers table.
type Dialect string

// The dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// EnsureSchema creates the customers table if it does not exist. On
// PostgreSQL it takes a transaction-scoped advisory lock first, because two
// concurrent CREATE TABLE IF NOT EXISTS can still collide.
func EnsureSchema(ctx context.Context, db *sql.DB, d Dialect) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("customers schema: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	ddl := sqliteTable("IF NOT EXISTS customers")
	if d == Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(1919907687, hashtext(current_schema()))`); err != nil {
			return fmt.Errorf("customers schema lock: %w", err)
		}
		ddl = `CREATE TABLE IF NOT EXISTS customers (
			id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			email text NOT NULL UNIQUE,
			name text NOT NULL,
			country text,
			signup_date date NOT NULL,
			amount numeric(18,2),
			updated_at timestamptz NOT NULL)`
	}
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("customers schema: %w", err)
	}
	if err := optionalColumns(ctx, tx, d); err != nil {
		return fmt.Errorf("customers schema: %w", err)
	}
	return tx.Commit()
}

// sqliteTable is the customers table's definition on SQLite, under name.
func sqliteTable(name string) string {
	return `CREATE TABLE ` + name + ` (
		id INTEGER PRIMARY KEY,
		email TEXT NOT NULL UNIQUE,
		name TEXT NOT NULL,
		country TEXT,
		signup_date TEXT NOT NULL,
		amount TEXT,
		updated_at TEXT NOT NULL)`
}

// optionalColumns lets country and amount be NULL in a table made before
// they were optional (NOT NULL, filled with ” and 0 when a file had no
// value). PostgreSQL drops the constraints in place; SQLite cannot, so the
// table is rebuilt, once, inside the caller's transaction.
func optionalColumns(ctx context.Context, tx *sql.Tx, d Dialect) error {
	if d == Postgres {
		_, err := tx.ExecContext(ctx, `ALTER TABLE customers ALTER COLUMN country DROP NOT NULL, ALTER COLUMN amount DROP NOT NULL`)
		return err
	}
	var notNull int
	if err := tx.QueryRowContext(ctx, `SELECT "notnull" FROM pragma_table_info('customers') WHERE name = 'country'`).Scan(&notNull); err != nil {
		return err
	}
	if notNull == 0 {
		return nil
	}
	for _, stmt := range []string{
		sqliteTable("customers_optional"),
		`INSERT INTO customers_optional SELECT id, email, name, country, signup_date, amount, updated_at FROM customers`,
		`DROP TABLE customers`,
		`ALTER TABLE customers_optional RENAME TO customers`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// Processor upserts a customer by email and returns its id.
type Processor struct {
	db *sql.DB
	d  Dialect
}

// NewProcessor returns a processor writing to db.
func NewProcessor(db *sql.DB, d Dialect) *Processor { return &Processor{db: db, d: d} }

// upsertSQL inserts or updates a customer by email; the same text runs on
// PostgreSQL and SQLite. An optional value the file did not give arrives
// as NULL, and COALESCE keeps the stored one: a file that does not mention
// a column never changes it.
const upsertSQL = `INSERT INTO customers (email, name, country, signup_date, amount, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (email) DO UPDATE SET name = excluded.name,
		country = COALESCE(excluded.country, customers.country),
		signup_date = excluded.signup_date,
		amount = COALESCE(excluded.amount, customers.amount),
		updated_at = excluded.updated_at
	RETURNING id`

// upsertArgs are a customer's values for upsertSQL, NULL (nil) for an
// optional value the file did not give.
func upsertArgs(c Customer) []any {
	var country, amount any
	if c.Country.Set {
		country = strings.ToUpper(c.Country.Value)
	}
	if c.Amount.Set {
		amount = c.Amount.Value.String()
	}
	return []any{strings.ToLower(c.Email), c.Name, country, c.SignupDate.Format("2006-01-02"), amount, time.Now().UTC().Format(time.RFC3339Nano)}
}

// Process upserts one customer.
func (p *Processor) Process(ctx context.Context, c Customer) (string, error) {
	var id int64
	if err := p.db.QueryRowContext(ctx, upsertSQL, upsertArgs(c)...).Scan(&id); err != nil {
		return "", fmt.Errorf("upsert customer %s: %w", c.Email, err)
	}
	return strconv.FormatInt(id, 10), nil
}

// Kind returns the customers kind with its processor on db.
func Kind(db *sql.DB, d Dialect) batch.Kind[Customer] {
	return batch.Kind[Customer]{
		Name:        Name,
		Description: "customers keyed by email, upserted into the customers table",
		Processor:   NewProcessor(db, d),
		// The upsert is keyed by email: a second row with the same email
		// in one file would silently overwrite the first.
		KeyFunc: func(c Customer) string { return strings.ToLower(strings.TrimSpace(c.Email)) },
		KeyName: "email",
		Example: &Customer{
			Email: "ada@example.com", Name: "Ada Lovelace", Country: rows.Some("GB"),
			SignupDate: time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC), Amount: rows.Some(rows.NewDecimal(125050, 2)),
		},
	}
}
