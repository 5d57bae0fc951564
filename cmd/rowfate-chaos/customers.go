package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rowfate/rowfate/batch/driver"
)

// customerRow is a succeeded row of a customers batch, as the kind maps
// it onto the customers table (processors/customers: email lower-cased,
// country upper-cased; an empty country or amount leaves the stored value
// alone).
type customerRow struct {
	batch, row int64
	result     string
	// committed is when the row's flush committed: the upserts of one
	// tenant+email take effect in that order.
	committed *time.Time
	email     string
	name      string
	country   string
	date      string
	amount    string
}

// customer is a row of the customers table.
type customer struct {
	id                          int64
	name, country, date, amount string
	hasCountry, hasAmount       bool
}

// checkCustomers compares the customers table with the succeeded rows of
// the customers (transactional) batches: every customer has a succeeded
// row for its tenant and email, every succeeded row's result is its
// customer's id, and the customer's values are the rows' folded in commit
// order (the latest row's, but for a country or amount a row left empty,
// which keeps the one before).
func (h *harness) checkCustomers(ctx context.Context, all []*imported) error {
	r := h.rep
	byKey := map[string][]*customerRow{}
	for _, b := range all {
		if b.Kind != "customers" {
			continue
		}
		got, err := h.store.BatchGet(ctx, driver.BatchGetParams{TenantID: b.Tenant, ID: b.ID})
		if err != nil {
			return err
		}
		col := func(name string) int { return slices.Index(got.Header, name) }
		email, name, country, date, amount := col("email"), col("name"), col("country"), col("signup_date"), col("amount")
		rs, err := h.pool.Query(ctx, `SELECT r.row_no, coalesce(r.result_id, ''), coalesce(v.payload, r.payload)::text, pg_xact_commit_timestamp(r.xmin)
			FROM rowfate.batch_rows r LEFT JOIN rowfate.batch_values v ON v.batch_id = r.batch_id AND v.row_no = r.row_no
			WHERE r.batch_id = $1 AND r.state = 'succeeded'`, b.ID)
		if err != nil {
			return err
		}
		for rs.Next() {
			c := &customerRow{batch: b.ID}
			var payload string
			if err := rs.Scan(&c.row, &c.result, &payload, &c.committed); err != nil {
				rs.Close()
				return err
			}
			var v []string
			if err := json.Unmarshal([]byte(payload), &v); err != nil {
				rs.Close()
				return fmt.Errorf("batch %d row %d payload: %w", b.ID, c.row, err)
			}
			cell := func(i int) string {
				if i < 0 || i >= len(v) {
					return ""
				}
				return strings.TrimSpace(v[i])
			}
			c.email, c.name, c.country, c.date, c.amount = strings.ToLower(cell(email)), cell(name), strings.ToUpper(cell(country)), cell(date), cell(amount)
			k := b.Tenant + "\x00" + c.email
			byKey[k] = append(byKey[k], c)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
	}
	if h.o.sabotage["drop-customer"] {
		// One customer lost, one changed, one no row made.
		t := h.customersTable(ctx)
		for _, stmt := range []string{
			`DELETE FROM %s WHERE id = (SELECT min(id) FROM %[1]s)`,
			`UPDATE %s SET name = name || ' (changed)' WHERE id = (SELECT max(id) FROM %[1]s)`,
			`INSERT INTO %s (tenant_id, email, name, signup_date, updated_at) VALUES ('acme', 'stray@example.com', 'Stray', '2021-01-01', now())`,
		} {
			if _, err := h.pool.Exec(ctx, fmt.Sprintf(stmt, t)); err != nil {
				return err
			}
		}
	}
	table := h.customersTable(ctx)
	rs, err := h.pool.Query(ctx, `SELECT tenant_id, email, id, name, coalesce(country, ''), country IS NOT NULL, signup_date::text,
		coalesce(amount::text, ''), amount IS NOT NULL FROM `+table)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	seen := map[string]bool{}
	for rs.Next() {
		var tenant, email string
		var c customer
		if err := rs.Scan(&tenant, &email, &c.id, &c.name, &c.country, &c.hasCountry, &c.date, &c.amount, &c.hasAmount); err != nil {
			rs.Close()
			return err
		}
		r.Customers++
		k := tenant + "\x00" + email
		seen[k] = true
		rowsOf := byKey[k]
		if len(rowsOf) == 0 {
			r.violate("customer_without_row", "customer %d (%s, %s) has no succeeded customers row", c.id, tenant, email)
			continue
		}
		h.checkCustomer(tenant, email, c, rowsOf)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	for k, rowsOf := range byKey {
		if !seen[k] {
			tenant, email, _ := strings.Cut(k, "\x00")
			c := rowsOf[0]
			r.violate("row_without_customer", "batch %d row %d succeeded (result %s) but tenant %s has no customer %s", c.batch, c.row, c.result, tenant, email)
		}
	}
	return nil
}

// checkCustomer compares one customer with its succeeded rows.
func (h *harness) checkCustomer(tenant, email string, c customer, rowsOf []*customerRow) {
	r := h.rep
	for _, x := range rowsOf {
		if x.result != strconv.FormatInt(c.id, 10) {
			r.violate("customer_id_differs", "batch %d row %d (%s, %s) succeeded with result %q, the customer's id is %d", x.batch, x.row, tenant, email, x.result, c.id)
		}
	}
	// Fold the rows in commit order. Without commit times (there should
	// be), any order whose fold matches passes.
	sort.SliceStable(rowsOf, func(i, j int) bool {
		a, b := rowsOf[i].committed, rowsOf[j].committed
		return a != nil && b != nil && a.Before(*b)
	})
	want := fold(rowsOf)
	want.id = c.id
	if got := (customer{id: c.id, name: c.name, country: c.country, date: c.date, amount: normAmount(c.amount), hasCountry: c.hasCountry, hasAmount: c.hasAmount}); got != want {
		var sources []string
		for _, x := range rowsOf {
			at := "?"
			if x.committed != nil {
				at = x.committed.Format("15:04:05.000000")
			}
			sources = append(sources, fmt.Sprintf("batch %d row %d at %s: %s/%s/%s/%s", x.batch, x.row, at, x.name, x.country, x.date, x.amount))
		}
		r.violate("customer_values", "customer %d (%s, %s) is %s/%s/%s/%s, its rows say %s/%s/%s/%s (%s)", c.id, tenant, email,
			got.name, got.country, got.date, got.amount, want.name, want.country, want.date, want.amount, strings.Join(sources, "; "))
	}
}

// fold is what upserting rows in order leaves: name and date from the
// last, country and amount from the last that gave one.
func fold(rowsOf []*customerRow) customer {
	var c customer
	for _, x := range rowsOf {
		c.name, c.date = x.name, x.date
		if x.country != "" {
			c.country, c.hasCountry = x.country, true
		}
		if x.amount != "" {
			c.amount, c.hasAmount = normAmount(x.amount), true
		}
	}
	return c
}

// normAmount writes an amount with two decimals, as numeric(18,2) does.
func normAmount(s string) string {
	if s == "" {
		return ""
	}
	v, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	return v.FloatString(2)
}

// customersTable is the customers table's qualified name: the kind
// creates it in the engine's schema.
func (h *harness) customersTable(ctx context.Context) string {
	var schema string
	if err := h.pool.QueryRow(ctx, `SELECT table_schema FROM information_schema.tables WHERE table_name = 'customers'
		ORDER BY table_schema = 'rowfate' DESC LIMIT 1`).Scan(&schema); err != nil {
		return "rowfate.customers"
	}
	return pgx.Identifier{schema, "customers"}.Sanitize()
}
