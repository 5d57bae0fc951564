package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAPIUnknownFormField: a multipart field the endpoint does not read is
// refused, naming it, as an unknown JSON member is (a misspelt locale was
// ignored, and the file imported without it).
func TestAPIUnknownFormField(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\na@example.com,Ann,FR,2020-01-02,1\n")
	for _, path := range []string{"/v1/batches", "/v1/batches/preview"} {
		a := h.upload(path, adminA, map[string]string{"kind": "customers", "locael": "de"}, "c.csv", file)
		if a.status != http.StatusBadRequest || !strings.Contains(a.problem(t).Detail, "form field locael") {
			t.Errorf("%s with locael: %s", path, a)
		}
	}
	if a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "locale": "de"}, "c.csv", file); a.status != http.StatusCreated {
		t.Errorf("with locale: %s", a)
	}
}

// TestAPIQuoteOption: quote and escape are import options of the API too.
func TestAPIQuoteOption(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\na@example.com,'Ann, Lee',FR,2020-01-02,1\n")
	a := h.upload("/v1/batches", adminA, map[string]string{"kind": "customers", "quote": "'"}, "c.csv", file)
	if a.status != http.StatusCreated || !strings.Contains(string(a.body), `"valid":1`) {
		t.Errorf("quote ': %s", a)
	}
	if a := h.upload("/v1/batches/preview", adminA, map[string]string{"kind": "customers", "quote": "xy"}, "c.csv", file); a.status != http.StatusBadRequest {
		t.Errorf("quote xy: %s", a)
	}
}
