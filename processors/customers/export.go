package customers

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// ExportKind returns the customers export: every customer of the export's
// tenant in the table on db, in id order, with the columns an import of the customers kind reads,
// so that an exported file imports back as the same rows.
func ExportKind(db *sql.DB) batch.ExportKind[Customer] {
	return batch.ExportKind[Customer]{
		Name:        Name,
		Description: "every customer of the tenant, from the customers table, in id order",
		RowsFunc: func(ctx context.Context) iter.Seq2[Customer, error] {
			return func(yield func(Customer, error) bool) {
				// CAST(... AS TEXT) reads the date the same way on both
				// engines: a date column on PostgreSQL, text on SQLite.
				// The export's tenant's customers only.
				rs, err := db.QueryContext(ctx, `SELECT email, name, country, CAST(signup_date AS TEXT), amount
					FROM customers WHERE tenant_id = $1 ORDER BY id`, tenantOf(ctx))
				if err != nil {
					yield(Customer{}, fmt.Errorf("query customers: %w", err))
					return
				}
				defer rs.Close()
				for rs.Next() {
					var (
						c               Customer
						date            string
						country, amount sql.NullString
					)
					if err := rs.Scan(&c.Email, &c.Name, &country, &date, &amount); err != nil {
						yield(Customer{}, fmt.Errorf("scan customer: %w", err))
						return
					}
					t, err := time.Parse("2006-01-02", date)
					if err != nil {
						// One bad stored date fails its row, not the export.
						if !yield(Customer{}, batch.Permanent(fmt.Errorf("customer %s: signup date %q is not a date", c.Email, date))) {
							return
						}
						continue
					}
					c.SignupDate = t
					c.Country = rows.Optional[string]{Value: country.String, Set: country.Valid}
					if amount.Valid {
						d, err := rows.ParseDecimal(amount.String)
						if err != nil {
							if !yield(Customer{}, batch.Permanent(fmt.Errorf("customer %s: amount %q is not a number", c.Email, amount.String))) {
								return
							}
							continue
						}
						c.Amount = rows.Some(d)
					}
					if !yield(c, nil) {
						return
					}
				}
				if err := rs.Err(); err != nil {
					yield(Customer{}, fmt.Errorf("query customers: %w", err))
				}
			}
		},
	}
}
