package batchctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rowfate/rowfate/internal/testenv"
)

// TestAdminE2E drives the admin page of `batchctl serve` in headless
// Chromium, against a real serve process with its own workers on SQLite:
// log in with an API token, preview and import the customers fixture, watch
// the websocket bring the progress bar to 100%, list the invalid rows,
// download the error report, and cancel a paused batch.
//
// It saves a screenshot of the batch page under
// $TMPDIR/rowfate-artifacts, and under $ROWFATE_ARTIFACTS when set.
func TestAdminE2E(t *testing.T) {
	fixturePath, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	b, a := startAdmin(t)
	base := a.base

	// Import the fixture through the preview.
	b.previewCustomers(fixturePath)
	b.do(chromedp.WaitVisible(chromedp.ID("import-submit")))
	// Every control of the import form is labelled, for screen readers.
	labelled(t, b)
	if got := b.text("#preview-counts"); !strings.Contains(got, "285 valid") || !strings.Contains(got, "15 invalid") {
		t.Errorf("preview counts %q, want 285 valid and 15 invalid", got)
	}
	b.do(chromedp.Click(chromedp.ID("import-submit")))
	b.wait(`/^#\/batches\/\d+$/.test(location.hash) && !!document.getElementById("progress-text")`, "the new batch's page")
	hash := b.eval(`location.hash`)
	id := strings.TrimPrefix(hash, "#/batches/")

	// The websocket, not polling, brings the bar to its end.
	b.wait(`(() => {
		const text = document.getElementById("progress-text").textContent;
		const bar = document.getElementById("progress");
		return text === "300 of 300" && bar.dataset.source === "ws" && bar.getAttribute("aria-valuenow") === "300";
	})()`, "300 of 300 from the websocket")
	if got := b.text("#progress-percent"); got != "100%" {
		t.Errorf("percent %q, want 100%%", got)
	}
	b.wait(`document.getElementById("batch-status").textContent === "finished"`, "status finished")

	// The serve process's workers did it: its metrics say so.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exposition, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`rowfate_row_outcomes_total{kind="customers",state="succeeded"} 285`, `rowfate_rows{state="invalid"} 15`, `rowfate_chunk_claims_total{kind="customers"}`} {
		if !strings.Contains(string(exposition), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The invalid rows.
	b.do(chromedp.Click(chromedp.CSS(`a[href="#/batches/`+id+`/rows"]`)),
		chromedp.WaitVisible(chromedp.ID("tab-invalid")),
		chromedp.Click(chromedp.ID("tab-invalid")))
	b.wait(`location.hash.endsWith("state=invalid") && document.getElementById("tab-invalid").getAttribute("aria-current") === "page" && document.querySelectorAll(".row-item").length > 0`, "the invalid rows")
	if n := b.eval(`String(document.querySelectorAll(".row-item").length)`); n != "15" {
		t.Errorf("%s invalid rows listed, want 15", n)
	}
	if got := b.text(".row-item .errors"); got == "" {
		t.Error("the first invalid row shows no error")
	}

	// Edit and save the first invalid row (row 10, email not-an-email):
	// the saved row (now without errors) and its values show no literal
	// null; nor does the batch's history of the edit, below (issue 27).
	b.do(chromedp.Click(chromedp.CSS(`.row-item[data-row="10"] button[data-action="edit"]`)),
		chromedp.WaitVisible(chromedp.ID("edit-10-0")),
		chromedp.SetValue(chromedp.ID("edit-10-0"), "grace.vanrossum9@example.com"),
		chromedp.Click(chromedp.CSS(`.row-item[data-row="10"] form button[type="submit"]`)))
	b.wait(`(() => { const r = document.querySelector('.row-item[data-row="10"]'); return !!r && !r.querySelector("form") && !r.querySelector(".row-form:not([hidden])"); })()`, "row 10 saved")
	b.do(chromedp.Click(chromedp.CSS(`.row-item[data-row="10"] details summary`)))
	b.wait(`!!document.querySelector('.row-item[data-row="10"] details dl')`, "row 10's values")
	if got := b.text(`.row-item[data-row="10"]`); strings.Contains(got, "null") || !strings.Contains(got, "grace.vanrossum9@example.com") {
		t.Errorf("the saved row 10 shows %q", got)
	}

	// The error report, downloaded through fetch and a blob URL.
	b.do(chromedp.Click(chromedp.CSS(`nav[aria-label="Breadcrumb"] a[href="#/batches/`+id+`"]`)),
		chromedp.WaitVisible(chromedp.ID("download-report-csv")))
	report := b.download(chromedp.Click(chromedp.ID("download-report-csv")))
	// A title row naming the batch, then the file's header.
	if lines := strings.SplitN(report, "\n", 3); len(lines) < 3 || !strings.Contains(lines[0], "batch "+id) || !strings.HasPrefix(lines[1], "email,") {
		t.Errorf("error report does not start with its title and the header:\n%.300s", report)
	}
	b.wait(`document.getElementById("progress-text").textContent === "300 of 300"`, "the batch page again")
	b.screenshot("admin-batch.png")
	b.do(chromedp.Click(chromedp.CSS(`#history summary`)))
	b.wait(`!!document.querySelector("#history table")`, "the history")
	if got := b.text("#history"); strings.Contains(got, "null") || !strings.Contains(got, "grace.vanrossum9@example.com") {
		t.Errorf("the history of the edit shows %q", got)
	}

	// The warning's hint is a control: a link to the re-run with a
	// decimal comma, set and focused; never a CLI flag.
	if got := b.text("#batch-warnings"); strings.Contains(got, "--decimal-comma") || !strings.Contains(got, "Re-run with a decimal comma") {
		t.Errorf("the batch's warnings: %q", got)
	}
	b.do(chromedp.Click(chromedp.CSS(`#batch-warnings a[data-option="decimal_comma"]`)))
	b.wait(`document.activeElement.id === "bulk-decimal-comma" && document.activeElement.checked && document.getElementById("bulk-action").value === "rerun"`, "the re-run with a decimal comma, focused")

	// A batch that cannot finish, paused through the API, cancelled in
	// the page.
	big := writeCustomers(t, 30_000)
	second := a.upload("customers", big)
	paused := a.post("/v1/batches/" + second + "/pause")
	if paused.Status == "finished" {
		t.Fatalf("batch %s finished before it could be paused: %+v", second, paused)
	}
	// The list reads it as paused first, and as needing attention.
	b.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/batches?attention=1"`))
	b.wait(`!!document.querySelector('tr[data-batch="`+second+`"] .status-cell')`, "the paused batch in the list of those needing attention")
	if got := b.text(`tr[data-batch="` + second + `"] .status-cell`); !strings.HasPrefix(got, "paused") {
		t.Errorf("the list shows the paused batch %s as %q", second, got)
	}
	b.do(chromedp.Evaluate[chromedp.Void](`location.hash = "#/batches/`+second+`"`),
		chromedp.WaitVisible(chromedp.ID("cancel")))
	b.wait(`document.getElementById("batch-paused") && !document.getElementById("batch-paused").hidden`, "the paused chip")
	b.do(chromedp.Click(chromedp.ID("cancel")),
		chromedp.WaitVisible(chromedp.ID("confirm-cancel")),
		chromedp.Click(chromedp.ID("confirm-cancel")))
	b.wait(`document.getElementById("batch-status").textContent === "cancelled"`, "status cancelled")
	if got := a.get("/v1/batches/" + second); got.Status != "cancelled" {
		t.Errorf("batch %s through the API: status %q, want cancelled", second, got.Status)
	}
	if got := b.text("#alert"); got != "" {
		t.Errorf("the page shows an error: %q", got)
	}
}

// startAdmin starts `batchctl serve` on a fresh SQLite database with two
// workers, and a headless Chromium logged in to its admin page with an
// admin token of tenant acme, with the keyboard: the token field has the
// focus, Enter submits. It skips without Chromium, unless
// ROWFATE_REQUIRE_CHROMIUM is set.
func startAdmin(t *testing.T) (*page, *adminAPI) {
	t.Helper()
	chrome := chromiumPath()
	if chrome == "" {
		msg := "no Chromium: neither /usr/bin/chromium nor chromium on PATH (apt-get install chromium)"
		if os.Getenv("ROWFATE_REQUIRE_CHROMIUM") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	bin := buildBatchctl(t)
	db := filepath.Join(t.TempDir(), "admin.db")
	token := createAPIToken(t, bin, db)
	base, serveLog := startServe(t, bin, "--database", db, "--workers", "2")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve log:\n%s", serveLog.String())
		}
	})
	a := &adminAPI{t: t, base: base, token: token}

	ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience(t))
	t.Cleanup(cancel)
	ctx = newBrowser(t, ctx, chrome)
	b := &page{t: t, ctx: ctx}
	b.do(chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")))
	b.wait(`document.activeElement && document.activeElement.id === "token"`, "the focus in the token field")
	b.do(chromedp.SendKeys(chromedp.ID("token"), token+"\r"))
	b.wait(`document.getElementById("session-tenant").textContent === "acme" && document.getElementById("session-role").textContent === "admin"`, "the header to show tenant acme, role admin")
	return b, a
}

// chromiumPath returns the Chromium binary, or "" when there is none.
func chromiumPath() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// createAPIToken creates an admin API token for tenant acme with the same
// binary the test serves with; the token is the last line of stdout.
func createAPIToken(t *testing.T, bin, db string) string {
	t.Helper()
	cmd := exec.Command(bin, "token", "create", "--database", db, "--tenant", "acme", "--role", "admin", "--name", "e2e")
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("token create: %v\n%s%s", err, out, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	tok := strings.TrimSpace(lines[len(lines)-1])
	if tok == "" {
		t.Fatalf("token create printed no token:\n%s", stderr.String())
	}
	return tok
}

// newBrowser starts a headless Chromium for the test, in a fresh profile,
// with the window of a 1366×768 laptop, and logs the page's uncaught
// exceptions. The browser ends with ctx.
func newBrowser(t *testing.T, ctx context.Context, chrome string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1366, 768),
	)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	// The browser must be gone before t.TempDir removes its profile:
	// cleanups run last in, first out.
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	exceptions := chromedp.Events(bctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			t.Logf("page exception: %s", ev.ExceptionDetails.Text)
			if ev.ExceptionDetails.Exception != nil {
				t.Logf("  %s", ev.ExceptionDetails.Exception.Description)
			}
		}
	}()
	return bctx
}

// page runs browser actions; any failure ends the test with the page's
// state.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v\n%s", err, p.state())
	}
}

// wait waits until the JavaScript expression is true. An exception counts
// as false: the page redraws a view while it loads, and an element the
// expression reads may be missing for a moment.
func (p *page) wait(expr, what string) {
	p.t.Helper()
	expr = "(() => { try { return !!(" + expr + "); } catch (e) { return false; } })()"
	// Give up before the test's context ends, so that the failure can
	// still read the page.
	timeout := testenv.Patience(p.t)
	if d, ok := p.ctx.Deadline(); ok && time.Until(d)-5*time.Second < timeout {
		timeout = max(time.Until(d)-5*time.Second, time.Second)
	}
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout))); err != nil {
		p.t.Fatalf("waiting for %s: %v\n%s", what, err, p.state())
	}
}

func (p *page) eval(expr string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v\n%s", expr, err, p.state())
	}
	return s
}

// text returns the text of the first element matching the CSS selector,
// "" when there is none.
func (p *page) text(sel string) string {
	p.t.Helper()
	q, _ := json.Marshal(sel)
	return p.eval(`(document.querySelector(` + string(q) + `) || {}).textContent || ""`)
}

// state describes the page for a failure message. It must not fail
// itself, and the test's context may be over.
func (p *page) state() string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		hash: location.hash,
		alert: document.getElementById("alert") && document.getElementById("alert").textContent,
		progress: document.getElementById("progress-text") && document.getElementById("progress-text").textContent,
		source: document.getElementById("progress") && document.getElementById("progress").dataset.source,
		status: document.getElementById("batch-status") && document.getElementById("batch-status").textContent,
		live: document.getElementById("live-status") && document.getElementById("live-status").textContent,
		main: document.getElementById("main").innerText.slice(0, 1500),
	}, null, 1)`))
	if err != nil {
		return "(page state unavailable: " + err.Error() + ")"
	}
	return "page: " + s
}

// download runs the trigger and returns the content of the file the
// browser downloads.
func (p *page) download(trigger chromedp.Action[chromedp.Void]) string {
	p.t.Helper()
	dir := p.t.TempDir()
	progress := chromedp.Events(p.ctx, browser.DownloadProgress)
	events := true
	_, err := chromedp.Call(p.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		// Files are named by their download's GUID, which the events give.
		Behavior:      browser.SetDownloadBehaviorBehaviorAllowAndName,
		DownloadPath:  dir,
		EventsEnabled: &events,
	})
	if err != nil {
		p.t.Fatalf("set download behavior: %v", err)
	}
	p.do(trigger)
	for ev, err := range progress {
		if err != nil {
			p.t.Fatalf("waiting for the download: %v\n%s", err, p.state())
		}
		switch ev.State {
		case browser.DownloadProgressStateCompleted:
			data, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				p.t.Fatal(err)
			}
			return string(data)
		case browser.DownloadProgressStateCanceled:
			p.t.Fatalf("download cancelled\n%s", p.state())
		}
	}
	p.t.Fatal("no download")
	return ""
}

// screenshot saves a full-page PNG under $TMPDIR/rowfate-artifacts, and
// under $ROWFATE_ARTIFACTS when set, where CI picks it up.
func (p *page) screenshot(name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	dirs := []string{filepath.Join(os.TempDir(), "rowfate-artifacts")}
	if d := os.Getenv("ROWFATE_ARTIFACTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			p.t.Fatal(err)
		}
		path := filepath.Join(d, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			p.t.Fatal(err)
		}
		p.t.Logf("screenshot: %s", path)
	}
}

// writeCustomers writes n customer rows with unique emails, in the format
// of the customers fixture.
func writeCustomers(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("email,name,country,signup_date,amount\n")
	for i := range n {
		fmt.Fprintf(&b, "e2e.customer%d@example.com,Customer %d,PT,2020-01-03,%d.25\n", i, i, i%900)
	}
	return writeFile(t, "customers-big.csv", []byte(b.String()))
}

// adminAPI calls the HTTP API as the test's token.
type adminAPI struct {
	t     *testing.T
	base  string
	token string
}

// apiBatch is the part of a Batch the test reads.
type apiBatch struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	Paused bool   `json:"paused"`
	Total  int64  `json:"total"`
	Done   int64  `json:"done"`
	// Counts are the rows by state; a state without rows is absent.
	Counts map[string]int64 `json:"counts"`
	Header []string         `json:"header"`
	// Conventions are how the batch's file was read.
	Conventions struct {
		DateOrder string `json:"date_order"`
		Renames   []struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"renames"`
	} `json:"conventions"`
}

func (a *adminAPI) call(method, path, contentType string, body io.Reader, want int) apiBatch {
	a.t.Helper()
	var b apiBatch
	a.request(method, path, contentType, body, want, &b)
	return b
}

// request calls the API and decodes its answer into v.
func (a *adminAPI) request(method, path, contentType string, body io.Reader, want int, v any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		a.t.Fatalf("%s %s: %s, want %d: %s", method, path, resp.Status, want, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		a.t.Fatalf("%s %s: %v: %s", method, path, err, data)
	}
}

func (a *adminAPI) get(path string) apiBatch {
	a.t.Helper()
	return a.call("GET", path, "", nil, http.StatusOK)
}

func (a *adminAPI) post(path string) apiBatch {
	a.t.Helper()
	return a.call("POST", path, "", nil, http.StatusOK)
}

// upload imports a file with a multipart POST /v1/batches and returns the
// new batch's id.
func (a *adminAPI) upload(kind, path string) string {
	a.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if err := w.WriteField("kind", kind); err != nil {
		a.t.Fatal(err)
	}
	f, err := w.CreateFormFile("file", filepath.Base(path))
	if err != nil {
		a.t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		a.t.Fatal(err)
	}
	f.Write(data)
	if err := w.Close(); err != nil {
		a.t.Fatal(err)
	}
	b := a.call("POST", "/v1/batches", w.FormDataContentType(), &body, http.StatusCreated)
	return fmt.Sprint(b.ID)
}
