package batchctl

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// germanFixture is a customers file as a German shop exports it:
// semicolons, decimal commas (1.234,56), dates as dd.mm.yyyy with every
// day at most 12 (so that nothing in the file says the date order), and
// the name column headed "Kundenname", which the kind does not know. Read
// with locale de, date order dmy and Kundenname mapped onto name, its 13
// rows are 7 valid and 6 invalid: row 5 has a bad email, row 7 a name
// with < >, rows 8-10 sign up before 2000 (too_early), row 11 has an
// amount without a country (required_with_amount).
const germanFixture = "../fixtures/admin/kunden_de.csv"

// TestAdminE2EGrid drives the admin page through issue 26's flows in
// headless Chromium, against `batchctl serve` on SQLite: import the
// German file with its locale and date order chosen in the page and its
// renamed column mapped; fix two cells in the grid with the keyboard;
// skip every row with one error code in bulk, after a preview; and find
// the right counts and state bar in the batch list. What the page shows
// is checked against the API.
func TestAdminE2EGrid(t *testing.T) {
	fixturePath, err := filepath.Abs(germanFixture)
	if err != nil {
		t.Fatal(err)
	}
	b, a := startAdmin(t)

	id := importGerman(t, b, a, fixturePath)
	useSavedOptions(t, b, fixturePath, id)
	fixInGrid(t, b, a, id)
	bulkSkip(t, b, a, id)

	// Two more batches, through the API: one whose rows are all invalid,
	// one whose rows all work (it needs nobody).
	bad := writeFile(t, "all-invalid.csv", []byte("email,name,country,signup_date,amount\nnot-an-email,A,DE,2020-01-01,1\nalso-not,B,DE,2020-01-01,1\n"))
	allBad := a.upload("customers", bad)
	clean := a.upload("customers", writeCustomers(t, 3))
	for _, bid := range []string{allBad, clean} {
		b.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/batches/` + bid + `"`))
		b.wait(`document.getElementById("batch-status").textContent === "finished"`, "batch "+bid+" finished")
	}
	checkList(t, b, a, id, allBad, clean)
	if got := b.text("#alert"); got != "" {
		t.Errorf("the page shows an error: %q", got)
	}
}

// importGerman previews the German file, maps Kundenname onto name,
// chooses locale de in its control and the date order through the
// button an error's hint became, and imports it. It returns the batch id.
func importGerman(t *testing.T, b *page, a *adminAPI, path string) string {
	t.Helper()
	b.previewCustomers(path)
	b.wait(`!!document.querySelector('#mapping tr[data-header="Kundenname"]')`, "the mapping table")
	// Without a column for name the header is refused: nothing to import.
	if got := b.text(`#mapping tr[data-header="Kundenname"]`); !strings.Contains(got, "unknown") {
		t.Errorf("Kundenname's mapping row says %q, want unknown", got)
	}
	if got := b.text("#mapping"); !strings.Contains(got, "missing (required)") {
		t.Errorf("the mapping does not say name is missing: %q", got)
	}
	if b.eval(`String(document.getElementById("import-submit").disabled)`) != "true" {
		t.Error("the import button is enabled for a refused header")
	}

	// Map the renamed column, and preview again.
	b.choose(`#mapping select[data-header="Kundenname"]`, "name")
	b.do(chromedp.Click(chromedp.ID("preview-again")))
	b.wait(`/13 invalid/.test(document.getElementById("preview-counts").textContent)`, "the dry run with name mapped: 13 invalid rows")
	if got := b.text(`#mapping tr[data-header="Kundenname"]`); !strings.Contains(got, "matched name") {
		t.Errorf("Kundenname's mapping row says %q, want matched name", got)
	}
	// The rows' real states, matched from the dry run's errors by row: no
	// row says ok.
	if got := b.text(`#preview-rows tr[data-row="2"] td.state`); got != "invalid" {
		t.Errorf("preview row 2 is %q, want invalid", got)
	}
	// The warning and the errors name options: buttons that set the
	// form's controls, not a CLI flag.
	for _, sel := range []string{`#warnings button[data-option="decimal_comma"]`, `#warnings button[data-option="locale"][data-value="de"]`,
		`#warnings button[data-option="date_order"][data-value="dmy"]`} {
		if b.eval(`String(!!document.querySelector('`+sel+`'))`) != "true" {
			t.Errorf("no hint button %s in %q", sel, b.text("#warnings"))
		}
	}
	if got := b.text("#preview"); strings.Contains(got, "--decimal-comma") || strings.Contains(got, "--date-order") {
		t.Errorf("the preview names a CLI flag: %q", got)
	}

	// The locale in its own control, the date order through the hint.
	b.choose("#opt-locale", "de")
	b.do(chromedp.Click(chromedp.CSS(`#warnings button[data-option="date_order"][data-value="dmy"]`)))
	b.wait(`document.activeElement.id === "opt-date_order" && document.activeElement.value === "dmy"`, "the date order set and focused by its hint")
	if b.eval(`String(document.getElementById("import-submit").disabled && !document.getElementById("import-dirty").hidden)`) != "true" {
		t.Error("the import button stays enabled after a choice changed")
	}
	b.do(chromedp.Click(chromedp.ID("import-preview")))
	b.wait(`/7 valid/.test(document.getElementById("preview-counts").textContent) && /6 invalid/.test(document.getElementById("preview-counts").textContent)`, "7 valid and 6 invalid rows")
	for row, want := range map[string]string{"2": "valid", "5": "invalid", "7": "invalid"} {
		if got := b.text(`#preview-rows tr[data-row="` + row + `"] td.state`); got != want {
			t.Errorf("preview row %s is %q, want %s", row, got, want)
		}
	}
	if got := b.eval(`document.querySelector('#preview-rows tr[data-row="5"] td.bad') ? document.querySelector('#preview-rows tr[data-row="5"] td.bad').textContent : ""`); got != "dieter.koch(at)example.com" {
		t.Errorf("row 5's bad cell is %q", got)
	}
	b.screenshot("admin-import.png")
	noNullText(t, b, "#main")
	// Every control of the import form and of the mapping is labelled.
	labelled(t, b)

	b.do(chromedp.Click(chromedp.ID("import-submit")))
	b.wait(`/^#\/batches\/\d+$/.test(location.hash) && !!document.getElementById("progress-text")`, "the new batch's page")
	id := strings.TrimPrefix(b.eval(`location.hash`), "#/batches/")
	b.wait(`document.getElementById("batch-status").textContent === "finished"`, "status finished")
	got := a.get("/v1/batches/" + id)
	if got.Counts["succeeded"] != 7 || got.Counts["invalid"] != 6 || got.Total != 13 {
		t.Errorf("batch %s through the API: counts %v, total %d; want 7 succeeded, 6 invalid of 13", id, got.Counts, got.Total)
	}
	if strings.Join(got.Header, ";") != "E-Mail;Kundenname;country;signup_date;amount" {
		t.Errorf("batch %s's header %q", id, got.Header)
	}
	// The page sent the mapping the person changed, not the engine's own
	// matches again.
	if c := got.Conventions; c.DateOrder != "dmy" || len(c.Renames) != 1 || c.Renames[0].From != "Kundenname" || c.Renames[0].To != "name" {
		t.Errorf("batch %s's conventions: %+v, want date order dmy and Kundenname renamed name", id, c)
	}
	return id
}

// useSavedOptions previews the German file again: the page offers the
// mapping and options of the batch just imported, and they read it as
// before. Nothing is imported.
func useSavedOptions(t *testing.T, b *page, path, id string) {
	t.Helper()
	b.previewCustomers(path)
	b.wait(`!!document.getElementById("use-saved")`, "the offer of the saved options")
	if got := b.text("#use-saved"); got != "Use the mapping and options of batch #"+id {
		t.Errorf("the offer says %q", got)
	}
	b.do(chromedp.Click(chromedp.ID("use-saved")))
	b.wait(`/7 valid/.test(document.getElementById("preview-counts").textContent) && /6 invalid/.test(document.getElementById("preview-counts").textContent)`, "the file read with the saved options")
	if got := b.eval(`[document.getElementById("opt-locale").value, document.getElementById("opt-date_order").value, document.querySelector('#mapping select[data-header="Kundenname"]').value].join(",")`); got != "de,dmy,name" {
		t.Errorf("the saved options set locale, date order, Kundenname's column to %s, want de,dmy,name", got)
	}
}

// fixInGrid opens the invalid rows from the batch list, moves in the grid
// with the keyboard, pastes a block and discards it, then fixes row 5's
// email (Enter, type, Enter) and row 7's name (typed over) and saves.
func fixInGrid(t *testing.T, b *page, a *adminAPI, id string) {
	t.Helper()
	b.do(chromedp.Click(chromedp.CSS(`#nav a[data-nav="batches"]`)))
	b.wait(`!!document.querySelector('tr[data-batch="`+id+`"] a[data-count="invalid"]')`, "the batch in the list")
	if got := b.text(`tr[data-batch="` + id + `"] a[data-count="invalid"]`); got != "6 invalid" {
		t.Errorf("the list says %q, want 6 invalid", got)
	}
	b.do(chromedp.Click(chromedp.CSS(`tr[data-batch="` + id + `"] a[data-count="invalid"]`)))
	b.wait(`document.querySelectorAll("#grid tbody tr").length === 6`, "6 invalid rows in the grid")
	cell := func(row, col string) string { return `#grid tr[data-row="` + row + `"] td[data-col="` + col + `"]` }
	// The bad cells carry their message, for the mouse and for screen
	// readers.
	if got := b.eval(`document.querySelector('` + cell("5", "E-Mail") + `').title`); got != "must be a valid email" {
		t.Errorf("row 5's email cell has the title %q", got)
	}
	if got := b.eval(`(() => { const c = document.querySelector('` + cell("5", "E-Mail") + `'); return c.classList.contains("bad") ? document.getElementById(c.getAttribute("aria-describedby")).textContent : ""; })()`); !strings.Contains(got, "must be a valid email") {
		t.Errorf("row 5's email cell is described by %q", got)
	}

	// The keyboard: from row 5's email, down is row 7's, right its name.
	b.do(chromedp.Focus(chromedp.CSS(cell("5", "E-Mail"))), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowRight))
	b.wait(`document.activeElement === document.querySelector('`+cell("7", "Kundenname")+`')`, "the focus on row 7's name")

	// A block pasted from a spreadsheet spreads from the focused cell:
	// two rows, two columns; then discarded.
	b.do(chromedp.Focus(chromedp.CSS(cell("10", "country"))), chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.setData("text/plain", "AT\t01.01.2001\r\nCH\t02.02.2002\r\n");
		document.activeElement.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
	})()`))
	b.wait(`document.querySelector('`+cell("11", "signup_date")+`').textContent === "02.02.2002" && document.getElementById("grid-save").textContent === "Save 2 changed rows"`, "the pasted block")
	if got := b.text(cell("10", "country")); got != "AT" {
		t.Errorf("row 10's country after the paste: %q", got)
	}
	b.do(chromedp.Click(chromedp.ID("grid-discard")))
	b.wait(`document.querySelector('`+cell("11", "signup_date")+`').textContent === "08.09.2016" && document.getElementById("grid-save").disabled`, "the paste discarded")

	// Escape cancels an edit.
	b.do(chromedp.Focus(chromedp.CSS(cell("11", "country"))), chromedp.KeyEvent(kb.Enter), chromedp.KeyEvent("XX"), chromedp.KeyEvent(kb.Escape))
	b.wait(`document.activeElement === document.querySelector('`+cell("11", "country")+`') && document.activeElement.textContent === "" && document.getElementById("grid-save").disabled`, "the edit of row 11 cancelled")

	// Fix two cells: Enter edits, typing replaces the selected text,
	// Enter keeps it; on row 7, typing starts the edit.
	b.do(chromedp.Focus(chromedp.CSS(cell("5", "E-Mail"))), chromedp.KeyEvent(kb.Enter))
	b.wait(`document.activeElement.classList.contains("cell-input") && document.activeElement.value === "dieter.koch(at)example.com"`, "row 5's email in edit mode")
	b.do(chromedp.KeyEvent("dieter.koch@example.com"), chromedp.KeyEvent(kb.Enter))
	b.do(chromedp.Focus(chromedp.CSS(cell("7", "Kundenname"))), chromedp.KeyEvent("Felix Hahn"), chromedp.KeyEvent(kb.Enter))
	b.wait(`document.getElementById("grid-save").textContent === "Save 2 changed rows"`, "two changed rows")
	for c, want := range map[string]string{cell("5", "E-Mail"): "dieter.koch@example.com", cell("7", "Kundenname"): "Felix Hahn"} {
		if got := b.text(c); got != want {
			t.Errorf("%s holds %q, want %q", c, got, want)
		}
	}
	b.do(chromedp.Click(chromedp.ID("grid-save")))
	b.wait(`/^Saved 2 rows/.test(document.getElementById("notice").textContent)`, "the rows saved")
	// Valid once saved, then worked: the grid follows them.
	for _, row := range []string{"5", "7"} {
		b.wait(`document.querySelector('#grid tr[data-row="`+row+`"] td.state').textContent === "succeeded"`, "row "+row+" succeeded in the grid")
		var r struct {
			State  string   `json:"state"`
			Values []string `json:"values"`
		}
		a.request("GET", "/v1/batches/"+id+"/rows/"+row, "", nil, http.StatusOK, &r)
		if r.State != "succeeded" {
			t.Errorf("row %s through the API: %q, want succeeded (%v)", row, r.State, r.Values)
		}
	}
	// The counts above the grid follow.
	b.wait(`document.getElementById("grid-counts").textContent === "13 rows: 9 succeeded, 4 invalid"`, "the counts after the saves")
	b.screenshot("admin-grid.png")
	labelled(t, b)
}

// bulkSkip filters the grid by the error code too_early and skips every
// such row in bulk, after the preview said how many.
func bulkSkip(t *testing.T, b *page, a *adminAPI, id string) {
	t.Helper()
	b.choose("#grid-code", "too_early")
	b.wait(`location.hash.includes("code=too_early") && !!document.getElementById("bulk-preview")`, "the grid filtered by too_early")
	b.do(chromedp.SendKeys(chromedp.ID("bulk-reason"), "signed up before the shop opened"),
		chromedp.Click(chromedp.ID("bulk-preview")))
	b.wait(`!!document.getElementById("bulk-summary") || document.getElementById("alert").textContent !== ""`, "the bulk preview")
	if got := b.text("#alert"); got != "" {
		t.Fatalf("the bulk preview failed: %s", got)
	}
	if got := b.text("#bulk-summary"); !strings.HasPrefix(got, "This will skip 3 rows") {
		t.Errorf("the bulk preview says %q, want This will skip 3 rows", got)
	}
	// The preview changed nothing.
	if got := a.get("/v1/batches/" + id); got.Counts["skipped"] != 0 || got.Counts["invalid"] != 4 {
		t.Fatalf("after the bulk preview, batch %s's counts are %v", id, got.Counts)
	}
	b.do(chromedp.Click(chromedp.ID("bulk-confirm")))
	b.wait(`document.getElementById("notice").textContent === "Skipped 3 rows." && !!document.getElementById("grid-empty")`, "3 rows skipped, none left in the filter")
	if got := a.get("/v1/batches/" + id); got.Counts["skipped"] != 3 || got.Counts["invalid"] != 1 || got.Counts["succeeded"] != 9 {
		t.Errorf("after the bulk skip, batch %s's counts are %v, want 9 succeeded, 3 skipped, 1 invalid", id, got.Counts)
	}
	var page struct {
		Rows []struct {
			RowNo int64 `json:"row_no"`
		} `json:"rows"`
	}
	a.request("GET", "/v1/batches/"+id+"/rows?state=skipped", "", nil, http.StatusOK, &page)
	var skipped []string
	for _, r := range page.Rows {
		skipped = append(skipped, fmt.Sprint(r.RowNo))
	}
	if got := strings.Join(skipped, ","); got != "8,9,10" {
		t.Errorf("skipped rows %s, want 8,9,10", got)
	}
	b.wait(`document.getElementById("grid-counts").textContent === "13 rows: 9 succeeded, 3 skipped, 1 invalid"`, "the counts after the bulk skip")

	// The batch page's link opens the rows to fix (invalid, failed, dead,
	// unknown): row 11 only; filtered by an error in country, the same.
	b.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/batches/` + id + `"`))
	b.wait(`!!document.getElementById("fix-rows") && document.getElementById("batch-statebar").getAttribute("aria-label") === "13 rows: 9 succeeded, 3 skipped, 1 invalid"`, "the batch page's state bar after the bulk skip")
	b.do(chromedp.Click(chromedp.ID("fix-rows")))
	b.wait(`document.getElementById("grid-state").value === "invalid,failed,dead,unknown" && [...document.querySelectorAll("#grid tbody tr")].map(r => r.dataset.row).join() === "11"`, "row 11, the one row left to fix")
	b.choose("#grid-column", "country")
	b.wait(`location.hash.includes("column=country") && [...document.querySelectorAll("#grid tbody tr")].map(r => r.dataset.row).join() === "11"`, "row 11 by its error in country")
	b.choose("#grid-column", "E-Mail")
	b.wait(`location.hash.includes("column=E-Mail") && !!document.getElementById("grid-empty")`, "no row with an error in E-Mail")

	// The cells' condition: every state, the rows whose country cell is
	// AT, typed and entered; a where the server cannot read is said, with
	// the field kept to fix it.
	// Each filter change draws the grid anew: the next step waits for the
	// new one.
	drawn := func(state, column string) string {
		return `!!document.getElementById("grid-where") && document.getElementById("grid-state").value === "` + state +
			`" && document.getElementById("grid-column").value === "` + column + `"`
	}
	b.choose("#grid-column", "")
	b.wait(`!location.hash.includes("column=") && `+drawn("invalid,failed,dead,unknown", ""), "the column filter cleared")
	b.choose("#grid-state", "all")
	b.wait(`location.hash.includes("state=all") && `+drawn("all", ""), "every state")
	b.do(chromedp.SendKeys(chromedp.ID("grid-where"), "country = AT\r"))
	b.wait(`location.hash.includes("where=") && `+drawn("all", "")+` && [...document.querySelectorAll("#grid tbody tr")].map(r => r.dataset.row).join() === "4,9"`, "rows 4 and 9, the AT ones")
	b.choose("#grid-where", "amount >")
	b.wait(`!!document.getElementById("grid-empty") && document.getElementById("alert").textContent.includes("where \"amount >\"") && document.getElementById("grid-where").value === "amount >"`, "the unreadable where said, the field kept")
}

// checkList reads the batch list: each batch's counts that need a person,
// and its state bar's segments against the API's counts.
func checkList(t *testing.T, b *page, a *adminAPI, id, allBad, clean string) {
	t.Helper()
	b.do(chromedp.Click(chromedp.CSS(`#nav a[data-nav="batches"]`)))
	b.wait(`document.querySelectorAll("#batches tbody tr").length === 3`, "three batches in the list")
	b.screenshot("admin-list.png")
	labelled(t, b)
	for _, bid := range []string{id, allBad, clean} {
		want := a.get("/v1/batches/" + bid)
		bar := statebar(t, b, bid)
		for state, n := range want.Counts {
			if bar.counts[state] != n {
				t.Errorf("batch %s's bar: %s %d, the API %d", bid, state, bar.counts[state], n)
			}
		}
		if len(bar.counts) != len(want.Counts) {
			t.Errorf("batch %s's bar has segments %v, the API counts %v", bid, bar.counts, want.Counts)
		}
		// Each segment is as wide as its share, to a pixel.
		for state, w := range bar.widths {
			share := bar.total * float64(want.Counts[state]) / float64(want.Total)
			if math.Abs(w-share) > 1.5 {
				t.Errorf("batch %s's %s segment is %.1f px of %.1f, want %.1f", bid, state, w, bar.total, share)
			}
		}
		// Only succeeded is green.
		for state, green := range bar.green {
			if green != (state == "succeeded") {
				t.Errorf("batch %s's %s segment: green %v", bid, state, green)
			}
		}
	}
	if got := statebar(t, b, id).label; got != "13 rows: 9 succeeded, 3 skipped, 1 invalid" {
		t.Errorf("the bar's text alternative: %q", got)
	}
	if got := b.text(`tr[data-batch="` + id + `"] a[data-count="invalid"]`); got != "1 invalid" {
		t.Errorf("batch %s needs %q, want 1 invalid", id, got)
	}
	if got := b.text(`tr[data-batch="` + allBad + `"] a[data-count="invalid"]`); got != "2 invalid" {
		t.Errorf("batch %s needs %q, want 2 invalid", allBad, got)
	}
	if bar := statebar(t, b, allBad); bar.counts["succeeded"] != 0 || bar.green["invalid"] {
		t.Errorf("the all-invalid batch %s shows green: %+v", allBad, bar)
	}
	if got := b.text(`tr[data-batch="` + clean + `"] td:nth-child(6)`); got != "—" {
		t.Errorf("the clean batch %s needs %q", clean, got)
	}
	noNullText(t, b, "#main")

	// Needs attention: the clean batch goes.
	b.do(chromedp.Click(chromedp.ID("attention-filter")))
	b.wait(`location.hash.includes("attention=1") && document.getElementById("attention-filter").checked && document.querySelectorAll("#batches tbody tr").length === 2`, "two batches needing attention")
	if b.eval(`String(!!document.querySelector('tr[data-batch="`+clean+`"]'))`) != "false" {
		t.Errorf("the clean batch %s is listed as needing attention", clean)
	}
}

// stateBarView is a batch's state bar as the page draws it.
type stateBarView struct {
	label  string
	total  float64
	counts map[string]int64
	widths map[string]float64
	green  map[string]bool
}

func statebar(t *testing.T, b *page, id string) stateBarView {
	t.Helper()
	raw := b.eval(`JSON.stringify((() => {
		const bar = document.querySelector('.statebar[data-batch="` + id + `"]');
		const segs = [...bar.querySelectorAll(".seg")].map((s) => ({ state: s.dataset.state, count: Number(s.dataset.count),
			width: s.getBoundingClientRect().width, colour: getComputedStyle(s).backgroundColor }));
		return { label: bar.getAttribute("aria-label"), total: bar.clientWidth, segs };
	})())`)
	var v struct {
		Label string  `json:"label"`
		Total float64 `json:"total"`
		Segs  []struct {
			State  string  `json:"state"`
			Count  int64   `json:"count"`
			Width  float64 `json:"width"`
			Colour string  `json:"colour"`
		} `json:"segs"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("batch %s's state bar: %v: %s", id, err, raw)
	}
	out := stateBarView{label: v.Label, total: v.Total, counts: map[string]int64{}, widths: map[string]float64{}, green: map[string]bool{}}
	for _, s := range v.Segs {
		out.counts[s.State] = s.Count
		out.widths[s.State] = s.Width
		var r, g, bl int
		fmt.Sscanf(s.Colour, "rgb(%d, %d, %d)", &r, &g, &bl)
		out.green[s.State] = g > r+40 && g > bl+40
	}
	return out
}

// labelled fails when a control of the page has no label, for screen
// readers.
func labelled(t *testing.T, b *page) {
	t.Helper()
	if unlabelled := b.eval(`[...document.querySelectorAll("input, select, textarea")].filter(e => e.type !== "hidden" && e.labels.length === 0 && !e.getAttribute("aria-label")).map(e => e.id || e.name).join(",")`); unlabelled != "" {
		t.Errorf("%s: controls without a label: %s", b.eval(`location.hash`), unlabelled)
	}
}

// noNullText fails when the element's text shows a literal null or
// undefined.
func noNullText(t *testing.T, b *page, sel string) {
	t.Helper()
	text := b.eval(`document.querySelector("` + sel + `").innerText`)
	for _, w := range strings.Fields(text) {
		if w == "null" || w == "undefined" || strings.Contains(w, "null,") || strings.Contains(w, "undefined") {
			t.Errorf("%s shows %q: %.400s", sel, w, text)
			return
		}
	}
}

// choose sets a select's value as a person does: the value, then a
// change event.
func (p *page) choose(sel, value string) {
	p.t.Helper()
	q, _ := json.Marshal(sel)
	v, _ := json.Marshal(value)
	p.do(chromedp.Evaluate[chromedp.Void](`(() => {
		const s = document.querySelector(` + string(q) + `);
		s.focus();
		s.value = ` + string(v) + `;
		s.dispatchEvent(new Event("change", { bubbles: true }));
	})()`))
}

// previewCustomers opens the import page and previews the file as
// customers.
func (p *page) previewCustomers(path string) {
	p.t.Helper()
	p.do(chromedp.Click(chromedp.CSS(`#nav a[data-nav="import"]`)),
		chromedp.WaitVisible(chromedp.ID("import-file")),
		chromedp.SetValue(chromedp.ID("import-kind"), "customers"),
		chromedp.SetUploadFiles(chromedp.ID("import-file"), []string{path}),
		chromedp.Click(chromedp.ID("import-preview")))
}
