package customers

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/where"
)

// exportColumns are the columns an export's where may name: the file's
// columns. On SQLite signup_date is ISO text, which compares as a date
// does, and amount is exact text, which package where compares as a REAL.
var exportColumns = []where.Column{
	{Name: "email", Type: where.Text},
	{Name: "name", Type: where.Text},
	{Name: "country", Type: where.Text},
	{Name: "signup_date", Type: where.Date},
	{Name: "amount", Type: where.Number},
}

// ExportKind returns the customers export: every customer of the export's
// tenant in the table on db, in id order, with the columns an import of
// the customers kind reads, so that an exported file imports back as the
// same rows. It takes filters (batch.ExportFilter): a where over the
// file's columns, and the rows of a customers import batch, whose result
// ids are the customers' ids.
func ExportKind(db *sql.DB, d Dialect) batch.ExportKind[Customer] {
	return batch.ExportKind[Customer]{
		Name:        Name,
		Description: "every customer of the tenant, from the customers table, in id order",
		CheckFilter: func(f batch.ExportFilter) error {
			_, err := parseExportWhere(f.Where)
			return err
		},
		FilterRowsFunc: func(ctx context.Context, f batch.ExportFilter) iter.Seq2[Customer, error] {
			return func(yield func(Customer, error) bool) {
				e, err := parseExportWhere(f.Where)
				if err != nil {
					yield(Customer{}, err)
					return
				}
				// Every value of the filter is a parameter after the
				// tenant's: a filter cannot inject SQL.
				cond, args := e.SQL(d, 2)
				// CAST(... AS TEXT) reads the date the same way on both
				// engines: a date column on PostgreSQL, text on SQLite.
				// The export's tenant's customers only.
				rs, err := db.QueryContext(ctx, `SELECT id, email, name, country, CAST(signup_date AS TEXT), amount
					FROM customers WHERE tenant_id = $1 AND `+cond+` ORDER BY id`, append([]any{tenantOf(ctx)}, args...)...)
				if err != nil {
					yield(Customer{}, fmt.Errorf("query customers: %w", err))
					return
				}
				defer rs.Close()
				for rs.Next() {
					var (
						id              int64
						c               Customer
						date            string
						country, amount sql.NullString
					)
					if err := rs.Scan(&id, &c.Email, &c.Name, &country, &date, &amount); err != nil {
						yield(Customer{}, fmt.Errorf("scan customer: %w", err))
						return
					}
					// A batch's customers are kept here, not in SQL: the
					// set comes from the batch's store, which need not be
					// this database, and a customer read is cheap next
					// to its row of the file.
					if f.ResultIDs != nil && !f.ResultIDs[strconv.FormatInt(id, 10)] {
						continue
					}
					if !yield(customerRow(c, date, country, amount)) {
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

// parseExportWhere reads an export's where over the file's columns; an
// unknown column is refused, naming the allowed ones.
func parseExportWhere(text string) (*where.Expr, error) {
	e, err := where.Parse(text, exportColumns)
	return e, where.WithColumns(err, exportColumns)
}

// customerRow is a customer read from the table, or the row error of a
// stored value that does not read back: one bad stored date or amount
// fails its row, not the export.
func customerRow(c Customer, date string, country, amount sql.NullString) (Customer, error) {
	t, err := time.Parse("2006-01-02", date)
	if err != nil {
		return Customer{}, batch.Permanent(fmt.Errorf("customer %s: signup date %q is not a date", c.Email, date))
	}
	c.SignupDate = t
	c.Country = rows.Optional[string]{Value: country.String, Set: country.Valid}
	if amount.Valid {
		d, err := rows.ParseDecimal(amount.String)
		if err != nil {
			return Customer{}, batch.Permanent(fmt.Errorf("customer %s: amount %q is not a number", c.Email, amount.String))
		}
		c.Amount = rows.Some(d)
	}
	return c, nil
}
