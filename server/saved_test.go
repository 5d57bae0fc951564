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
	onBothStores(t, apiOptions{}, testSavedOptions)
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

// TestAPIPreviewRowOutcomes: the preview gives each of the file's first
// rows its outcome with every error, even when the rows before it have
// used up the dry run's first errors (the page showed such a row "ok").
func TestAPIPreviewRowOutcomes(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	var file strings.Builder
	file.WriteString("email,name,country,signup_date,amount\n")
	for i := range 8 { // rows 2-9: three errors each, 24 in all
		fmt.Fprintf(&file, "bad%d,Name %d,PT,31/31/2020,abc\n", i, i)
	}
	file.WriteString("ok@example.com,Okay,PT,2020-01-02,1.00\n")  // row 10
	file.WriteString("late@example.com,Late,PT,2020-01-02,xyz\n") // row 11
	a := h.upload("/v1/batches/preview", adminA, map[string]string{"kind": "customers"}, "many.csv", []byte(file.String()))
	if a.status != http.StatusOK {
		t.Fatalf("preview: %s", a)
	}
	var pv struct {
		Errors      []struct{ Row int64 } `json:"errors"`
		RowOutcomes []struct {
			Row    int64  `json:"row"`
			State  string `json:"state"`
			Errors []struct {
				Column, Code string
			} `json:"errors"`
		} `json:"row_outcomes"`
	}
	a.decode(t, &pv)
	if len(pv.Errors) != 20 || pv.Errors[19].Row > 9 {
		t.Fatalf("the dry run's first errors: %+v", pv.Errors)
	}
	if len(pv.RowOutcomes) != 10 {
		t.Fatalf("%d row outcomes, want 10: %+v", len(pv.RowOutcomes), pv.RowOutcomes)
	}
	for i, o := range pv.RowOutcomes {
		row := int64(i + 2)
		want, n := "invalid", 3
		switch row {
		case 10:
			want, n = "valid", 0
		case 11:
			want, n = "invalid", 1
		}
		if o.Row != row || o.State != want || len(o.Errors) != n {
			t.Errorf("row %d: %+v, want %s with %d errors", row, o, want, n)
		}
	}
	if last := pv.RowOutcomes[9]; len(last.Errors) == 1 && (last.Errors[0].Column != "amount" || last.Errors[0].Code == "") {
		t.Errorf("row 11's error: %+v", last.Errors[0])
	}
}
