package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAPIDateFormat: a compact date is a bad_date whose hints name
// date_format (validated against the OpenAPI document), and the option
// date_format reads it (issue 27, item 2).
func TestAPIDateFormat(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\nc1@example.com,Ann,FR,070125,1\n")
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "c.csv", file), http.StatusCreated)
	if b.Counts["invalid"] != 1 {
		t.Fatalf("a compact date undeclared: %+v", b)
	}
	a := h.get(fmt.Sprintf("/v1/batches/%d/rows?state=invalid", b.ID), viewerA)
	var page struct {
		Rows []apiRow `json:"rows"`
	}
	a.decode(t, &page)
	if len(page.Rows) != 1 || !strings.Contains(string(page.Rows[0].Errors), `"hints":[{"option":"date_format","values":["ddmmyy","yymmdd","mmddyy"]}]`) {
		t.Fatalf("rows: want the date_format hint: %s", a)
	}
	b = h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "date_format": "ddmmyy"}, "c.csv", file), http.StatusCreated)
	if b.Counts["valid"] != 1 {
		t.Fatalf("date_format ddmmyy: %+v", b)
	}
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "date_format": "dd/mm/yy"}, "c.csv", file); a.status != http.StatusBadRequest || !strings.Contains(a.String(), "date_format") {
		t.Fatalf("date_format dd/mm/yy: want a bad request naming date_format: %s", a)
	}
}
