package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestAPISavedOptionsAndAttention: a preview offers the options of the
// tenant's last import of the kind from a file with the same header, and
// only those; the batch list keeps the batches that need a person.
func TestAPISavedOptionsAndAttention(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testSavedOptions(t, mk(t, apiOptions{}))
		})
	}
}

// savedPreview is what the test reads of a preview.
type savedPreview struct {
	Upload       string           `json:"upload"`
	Counts       map[string]int64 `json:"counts"`
	SavedOptions *struct {
		BatchID int64 `json:"batch_id"`
		Options struct {
			Locale       string            `json:"locale"`
			DecimalComma bool              `json:"decimal_comma"`
			DateOrder    string            `json:"date_order"`
			Map          map[string]string `json:"map"`
			Ignore       []string          `json:"ignore"`
		} `json:"options"`
	} `json:"saved_options"`
}

func testSavedOptions(t *testing.T, h *apiHarness) {
	german := []byte("E-Mail;Kundenname;Land;Anmeldedatum;Betrag;Notiz\n" +
		"anna@example.com;Anna Alt;DE;03.04.2020;1.234,50;x\n" +
		"bad-email;Bernd Bau;DE;04.05.2021;12,00;y\n")
	preview := func(name string, file []byte) savedPreview {
		t.Helper()
		a := h.upload("/v1/batches/preview", adminA, map[string]string{"kind": "customers", "delimiter": ";"}, name, file)
		if a.status != http.StatusOK {
			t.Fatalf("preview: %s", a)
		}
		var pv savedPreview
		a.decode(t, &pv)
		return pv
	}
	if pv := preview("kunden.csv", german); pv.SavedOptions != nil {
		t.Fatalf("a first file of its header was offered options: %+v", pv.SavedOptions)
	}
	options := map[string]any{"delimiter": ";", "locale": "de", "date_order": "dmy", "ignore": []string{"Notiz"},
		"map": map[string]string{"E-Mail": "email", "Kundenname": "name", "Land": "country", "Anmeldedatum": "signup_date", "Betrag": "amount"}}
	pv := preview("kunden.csv", german)
	b := h.batchOf(h.postJSON("/v1/batches", adminA, map[string]any{"kind": "customers", "upload": pv.Upload, "source_name": "kunden.csv", "options": options}), http.StatusCreated)
	if b.Counts["valid"] != 1 || b.Counts["invalid"] != 1 {
		t.Fatalf("the German import: %+v", b)
	}

	// The same header again, in another file: its options are offered.
	next := preview("kunden-mai.csv", append(german, "carl@example.com;Carl;AT;01.02.2022;5,00;z\n"...))
	s := next.SavedOptions
	if s == nil || s.BatchID != b.ID || s.Options.Locale != "de" || s.Options.DateOrder != "dmy" || s.Options.DecimalComma ||
		len(s.Options.Map) != 5 || s.Options.Map["Kundenname"] != "name" || !slices.Equal(s.Options.Ignore, []string{"Notiz"}) {
		t.Fatalf("saved options: %+v", s)
	}
	// Another header (a column renamed) is another file: nothing offered.
	if pv := preview("other.csv", []byte("E-Mail-Adresse;Kundenname;Land;Anmeldedatum;Betrag;Notiz\na@example.com;A;DE;03.04.2020;1,00;x\n")); pv.SavedOptions != nil {
		t.Fatalf("options offered for another header: %+v", pv.SavedOptions)
	}
	// Another kind's imports are not looked at.
	if a := h.upload("/v1/batches/preview", adminA, map[string]string{"delimiter": ";"}, "kunden.csv", german); a.status != http.StatusOK || strings.Contains(string(a.body), "saved_options") {
		t.Fatalf("a preview without a kind: %s", a)
	}

	// The list: the German batch has an invalid row; a clean one does
	// not need anybody until it is paused.
	clean := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "clean.csv",
		[]byte("email,name,country,signup_date,amount\nc1@example.com,C One,PT,2020-01-03,1.00\n")), http.StatusCreated)
	h.work(clean.ID)
	ids := func(query string) []int64 {
		t.Helper()
		bs, _ := h.batches(adminA, query)
		var out []int64
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}
	if got := ids("?attention=true"); !slices.Equal(got, []int64{b.ID}) {
		t.Fatalf("attention: %v, want [%d]", got, b.ID)
	}
	if got := ids("?attention=false"); !slices.Equal(got, []int64{clean.ID, b.ID}) {
		t.Fatalf("attention=false: %v", got)
	}
	if a := h.postJSON(fmt.Sprintf("/v1/batches/%d/pause", clean.ID), adminA, map[string]any{}); a.status != http.StatusOK {
		t.Fatalf("pause: %s", a)
	}
	if got := ids("?attention=true&kind=customers"); !slices.Equal(got, []int64{clean.ID, b.ID}) {
		t.Fatalf("attention with a paused batch: %v", got)
	}
	if got := ids("?attention=true&kind=nope"); len(got) != 0 {
		t.Fatalf("attention, another kind: %v", got)
	}
	if a := h.get("/v1/batches?attention=maybe", adminA); a.status != http.StatusBadRequest {
		t.Fatalf("attention=maybe: %s", a)
	}
}
