package driver_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/where"
)

// TestParseWhere: a Where reads over the header's cells, trimmed and in
// any case; a column the header lacks or an unreadable expression is
// ErrInvalidRequest with the *where.Error; a name the header holds twice
// is refused only when the Where names it.
func TestParseWhere(t *testing.T) {
	t.Parallel()
	cell := func(i int) string { return "c" + strconv.Itoa(i) }
	for _, c := range []struct {
		header       []string
		where        string
		sql, refused string
	}{
		{[]string{"Country", " name "}, "country = DE and NAME is null", "((c0 = CAST($1 AS text)) AND (c1 IS NULL))", ""},
		{[]string{"Country", "name"}, "city = x", "", `unknown column "city" (columns: Country or name)`},
		{[]string{"Country", "name"}, "country in (", "", "at the end"},
		{[]string{"country", "name", "Country"}, "name = x", "(c1 = CAST($1 AS text))", ""},
		{[]string{"country", "name", "Country"}, "name = x or COUNTRY = DE", "", `the file's header has "country" twice`},
	} {
		e, err := driver.RowFilter{Where: c.where}.ParseWhere(driver.WhereColumns(c.header, cell))
		if c.refused != "" {
			if !errors.Is(err, driver.ErrInvalidRequest) || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%v %q: %v; want ErrInvalidRequest with %q", c.header, c.where, err, c.refused)
			}
			var we *where.Error
			if strings.Contains(c.refused, "twice") == errors.As(err, &we) {
				t.Errorf("%v %q: %v: a *where.Error exactly when the parser refused it", c.header, c.where, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v %q: %v", c.header, c.where, err)
			continue
		}
		if sql, _ := e.SQL(batchtype.Postgres, 1); sql != c.sql {
			t.Errorf("%v %q: %s, want %s", c.header, c.where, sql, c.sql)
		}
	}
}
