package processors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/processors"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/sqlite"
)

// customersFile is a customers file: two valid rows and an invalid one.
const customersFile = "email,name,country,signup_date,amount\n" +
	"ada@example.com,Ada,GB,2024-01-31,10\n" +
	"bob@example.com,Bob,FR,2024-02-01,\n" +
	"not-an-email,Nobody,FR,2024-02-01,\n"

// crm is a downstream that honours Idempotency-Key, as the kinds expect:
// each key is applied once, and asked again it answers with the same id.
// It counts the POSTs of each tenant's customers, and answers on /status
// what became of a key.
type crm struct {
	mu    sync.Mutex
	ids   map[string]string // by Idempotency-Key
	posts map[string]int    // by tenant and email
	keys  map[string]string // the last key of each tenant and email
}

func newCRM() *crm {
	return &crm{ids: map[string]string{}, posts: map[string]int{}, keys: map[string]string{}}
}

func (c *crm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.URL.Path == "/status" {
		if id, ok := c.ids[key]; ok {
			fmt.Fprintf(w, `{"id":%q}`, id)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"applied":false}`)
		return
	}
	var body struct {
		Email string `json:"email"`
	}
	if b, err := io.ReadAll(r.Body); err != nil || json.Unmarshal(b, &body) != nil || key == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	who := r.Header.Get("X-Rowfate-Tenant") + "/" + body.Email
	c.posts[who]++
	c.keys[who] = key
	id, ok := c.ids[key]
	if !ok {
		id = fmt.Sprintf("crm-%d", len(c.ids)+1)
		c.ids[key] = id
	}
	fmt.Fprintf(w, `{"id":%q}`, id)
}

func (c *crm) postsOf(who string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posts[who]
}

func (c *crm) keyOf(who string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys[who]
}

// env is an engine on SQLite with the built-in kinds.
type env struct {
	store *sqlite.Store
	eng   *batch.Engine
}

func newEnv(t *testing.T, cfg processors.Config) *env {
	t.Helper()
	s := teststore.SQLite(t)
	cfg.DB = s.DB()
	reg, err := processors.Registry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := batch.NewEngine(batch.Config{Store: s, Registry: reg, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return &env{store: s, eng: eng}
}

// importAndWork imports a file as a new batch, even one imported before
// (NewBatch), and works it to the end.
func (e *env) importAndWork(t *testing.T, kind, tenant, file string) *batchtype.Batch {
	t.Helper()
	ctx := t.Context()
	b, err := e.eng.Import(ctx, batch.ImportParams{TenantID: tenant, Kind: kind, SourceName: "customers.csv", Source: strings.NewReader(file), NewBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{tenant}, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	return b
}

// outcomes returns a batch's rows as "state result_id", by row number.
func (e *env) outcomes(t *testing.T, tenant string, id int64) map[int64]string {
	t.Helper()
	page, err := e.store.RowsList(t.Context(), driver.RowsListParams{TenantID: tenant, BatchID: id, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, r := range page {
		out[r.RowNo] = string(r.State) + " " + r.ResultID
	}
	return out
}

// TestWebhookEffectOncePerRow: importing the same customers again as a
// new batch, from the same file or one saved again, does not post them
// again: their effect
// keys come from the rows, not from the batch, so the engine finds them
// done and the new batch's rows take the first batch's ids. Another
// tenant's identical rows, and a changed row, are effects of their own.
func TestWebhookEffectOncePerRow(t *testing.T) {
	t.Parallel()
	down := newCRM()
	srv := httptest.NewServer(down)
	defer srv.Close()
	e := newEnv(t, processors.Config{WebhookURL: srv.URL + "/customers"})
	const kind = processors.WebhookKind

	first := e.importAndWork(t, kind, "acme", customersFile)
	want := e.outcomes(t, "acme", first.ID)
	if !strings.HasPrefix(want[2], "succeeded crm-") || !strings.HasPrefix(want[3], "succeeded crm-") || want[4] != "invalid " {
		t.Fatalf("first batch: %v", want)
	}
	// The same file, the same rows saved again (other line endings:
	// another file to a check by digest), and the same customers in a file
	// with its columns in another order and one the kind ignores (another
	// row to a digest of cells, the same payload once bound).
	reordered := "country,email,notes,name,amount,signup_date\n" +
		"GB,ada@example.com,vip,Ada,10,2024-01-31\n" +
		"FR,bob@example.com,,Bob,,2024-02-01\n" +
		"FR,not-an-email,,Nobody,,2024-02-01\n"
	for _, file := range []string{customersFile, strings.ReplaceAll(customersFile, "\n", "\r\n"), reordered} {
		b := e.importAndWork(t, kind, "acme", file)
		if got := e.outcomes(t, "acme", b.ID); b.ID == first.ID || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("batch %d, the same rows again: %v; want the first batch's %v", b.ID, got, want)
		}
	}
	for _, who := range []string{"acme/ada@example.com", "acme/bob@example.com"} {
		if n := down.postsOf(who); n != 1 {
			t.Errorf("%s was POSTed %d times; want once", who, n)
		}
	}

	// Another tenant's identical rows are its own effects, under keys of
	// its own.
	other := e.importAndWork(t, kind, "globex", customersFile)
	got := e.outcomes(t, "globex", other.ID)
	if !strings.HasPrefix(got[2], "succeeded crm-") || got[2] == want[2] || got[3] == want[3] {
		t.Errorf("globex's batch: %v; want ids of its own (acme's: %v)", got, want)
	}
	if n := down.postsOf("globex/ada@example.com"); n != 1 {
		t.Errorf("globex's ada was POSTed %d times; want once", n)
	}
	if a, g := down.keyOf("acme/ada@example.com"), down.keyOf("globex/ada@example.com"); a == g {
		t.Errorf("acme and globex sent the same Idempotency-Key %q for the same row", a)
	}

	// A changed row is a new effect; the unchanged one is not.
	changed := e.importAndWork(t, kind, "acme", strings.Replace(customersFile, "Ada,GB", "Ada Lovelace,GB", 1))
	got = e.outcomes(t, "acme", changed.ID)
	if got[2] == want[2] || !strings.HasPrefix(got[2], "succeeded crm-") || got[3] != want[3] {
		t.Errorf("batch with ada changed: %v; want a new id for row 2 and row 3's first (%v)", got, want)
	}
	if n, m := down.postsOf("acme/ada@example.com"), down.postsOf("acme/bob@example.com"); n != 2 || m != 1 {
		t.Errorf("after a change of ada: ada POSTed %d times, bob %d; want 2 and 1", n, m)
	}
}

// markUnknown puts rows in the state a lost answer leaves them in:
// unknown, their effect key claimed. (The chunk's counts are not
// touched: settling recounts them.)
func markUnknown(t *testing.T, s *sqlite.Store, id int64, rowNos ...int64) {
	t.Helper()
	for _, n := range rowNos {
		for _, stmt := range []string{
			`UPDATE batch_rows SET state = 'unknown', result_id = NULL WHERE batch_id = ? AND row_no = ?`,
			`UPDATE effects SET state = 'claimed', result_id = NULL WHERE batch_id = ? AND row_no = ?`,
		} {
			if _, err := s.DB().ExecContext(t.Context(), stmt, id, n); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWebhookReconcile: with a status URL, `reconcile` asks the
// downstream about each unknown row with the key the row was sent with:
// a row it applied succeeds with its id, a row it never saw fails.
func TestWebhookReconcile(t *testing.T) {
	t.Parallel()
	down := newCRM()
	srv := httptest.NewServer(down)
	defer srv.Close()
	e := newEnv(t, processors.Config{WebhookURL: srv.URL + "/customers", WebhookStatusURL: srv.URL + "/status"})
	b := e.importAndWork(t, processors.WebhookKind, "acme", customersFile)
	want := e.outcomes(t, "acme", b.ID)
	// Row 2's answer was lost; row 3's request never arrived.
	markUnknown(t, e.store, b.ID, 2, 3)
	down.mu.Lock()
	delete(down.ids, down.keys["acme/bob@example.com"])
	down.mu.Unlock()

	st, err := e.eng.Reconcile(context.Background(), "acme", b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Succeeded != 1 || st.Failed != 1 || st.Left != 0 {
		t.Errorf("reconcile: %+v; want 1 succeeded, 1 failed", st)
	}
	got := e.outcomes(t, "acme", b.ID)
	if got[2] != want[2] || got[3] != "failed " {
		t.Errorf("after reconcile: %v; want row 2 %q and row 3 failed", got, want[2])
	}
	counts, err := e.store.RowsCount(t.Context(), driver.RowsCountParams{TenantID: "acme", BatchID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if counts[rows.StateUnknown] != 0 {
		t.Errorf("rows still unknown: %v", counts)
	}
}
