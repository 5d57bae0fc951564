package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/storetest"
)

// TestInlineCustomersMixed: an inline import whose rows are in turn new
// customers, customers stored by an earlier import and rows the table
// refuses gives each its own fate. The new ones are inserted, the stored
// ones updated in place (the same id), and only the refused rows fail:
// SQLite inserts new customers apart from the others (without a
// savepoint), and a refusal in that statement must not cost its
// neighbours.
func TestInlineCustomersMixed(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		var first bytes.Buffer
		first.WriteString("email,name,signup_date\n")
		for i := range 300 {
			fmt.Fprintf(&first, "c%d@example.com,Old %d,2024-01-02\n", i, i)
		}
		a, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "a.csv", Source: bytes.NewReader(first.Bytes()), WorkInline: true})
		if err != nil {
			t.Fatal(err)
		}
		if a.Counts[rows.StateSucceeded] != 300 {
			t.Fatalf("first import: %v", a.Counts)
		}
		oldIDs := customerIDsByEmail(t, bd)

		refuse := []string{`ALTER TABLE customers ADD CONSTRAINT refused CHECK (name <> 'Refused') NOT VALID`}
		if bd.dialect == customers.SQLite {
			refuse = []string{
				`CREATE TRIGGER refused_insert BEFORE INSERT ON customers WHEN NEW.name = 'Refused' BEGIN SELECT RAISE(ABORT, 'refused'); END`,
				`CREATE TRIGGER refused_update BEFORE UPDATE ON customers WHEN NEW.name = 'Refused' BEGIN SELECT RAISE(ABORT, 'refused'); END`,
			}
		}
		for _, stmt := range refuse {
			if _, err := bd.db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		// Rows 2, 4, ... (file rows) are stored customers, the others new;
		// one new and one stored customer, in the same hundred, refused.
		var second bytes.Buffer
		second.WriteString("email,name,signup_date\n")
		refused := map[int64]bool{}
		for i := range 400 {
			email, name := fmt.Sprintf("new%d@example.com", i), fmt.Sprintf("New %d", i)
			if i%2 == 0 {
				email = fmt.Sprintf("c%d@example.com", i/2)
			}
			if i == 41 || i == 60 {
				name = "Refused"
				refused[int64(i+2)] = true
			}
			fmt.Fprintf(&second, "%s,%s,2024-01-03\n", email, name)
		}
		b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "b.csv", Source: bytes.NewReader(second.Bytes()), WorkInline: true})
		if err != nil {
			t.Fatal(err)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", b.ID)
		if got[rows.StateSucceeded] != 398 || got[rows.StateFailed] != 2 {
			t.Fatalf("counts %v; want 398 succeeded and the 2 refused rows failed", got)
		}
		states := rowStates(t, bd.store, "default", b.ID)
		for row := range refused {
			if !strings.HasPrefix(states[row], "failed") {
				t.Errorf("row %d = %q, want failed", row, states[row])
			}
		}
		ids := customerIDsByEmail(t, bd)
		if len(ids) != 300+200-1 {
			t.Fatalf("%d customers, want 499 (one new one refused)", len(ids))
		}
		for email, id := range oldIDs {
			if ids[email] != id {
				t.Fatalf("%s: id %d, was %d: a stored customer was not updated in place", email, ids[email], id)
			}
		}
		var name string
		if err := bd.db.QueryRowContext(ctx, `SELECT name FROM customers WHERE email = 'c30@example.com'`).Scan(&name); err != nil || name != "Refused" && name != "Old 30" {
			t.Fatalf("c30: %q, %v", name, err)
		} else if name != "Old 30" {
			t.Fatalf("c30 = %q: a refused update was written", name)
		}
		if err := bd.db.QueryRowContext(ctx, `SELECT name FROM customers WHERE email = 'c31@example.com'`).Scan(&name); err != nil || name != "New 62" {
			t.Fatalf("c31 = %q, %v; want the second file's name", name, err)
		}
	})
}

// customerIDsByEmail reads the customers table: each email's id.
func customerIDsByEmail(t *testing.T, bd *bundle) map[string]int64 {
	t.Helper()
	rs, err := bd.db.QueryContext(context.Background(), `SELECT email, id FROM customers`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]int64{}
	for rs.Next() {
		var (
			email string
			id    int64
		)
		if err := rs.Scan(&email, &id); err != nil {
			t.Fatal(err)
		}
		out[email] = id
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
