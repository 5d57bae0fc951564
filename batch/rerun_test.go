package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/storetest"
)

// member is the row type of the re-run tests: keyed by email, with an
// amount whose rule a test tightens.
type member struct {
	Email  string `col:"email" validate:"required,email"`
	Name   string `col:"name" validate:"required"`
	Amount int    `col:"amount" validate:"gte=0"`
}

// strictMember is member under tightened rules.
type strictMember struct {
	Email  string `col:"email" validate:"required,email"`
	Name   string `col:"name" validate:"required"`
	Amount int    `col:"amount" validate:"gte=100"`
}

// downstream counts the calls per email: what an external system saw.
type downstream struct {
	mu    sync.Mutex
	calls map[string]int
	// refuse makes the calls for these emails fail for good.
	refuse map[string]bool
}

func newDownstream() *downstream {
	return &downstream{calls: map[string]int{}, refuse: map[string]bool{}}
}

func (d *downstream) call(email string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[email]++
	if d.refuse[email] {
		return "", batch.Permanent(errors.New("refused downstream"))
	}
	return "m-" + email, nil
}

func (d *downstream) count(email string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[email]
}

func membersRegistry(t *testing.T, d *downstream, strict bool) *batch.Registry {
	t.Helper()
	reg := batch.NewRegistry()
	var err error
	if strict {
		err = batch.Register(reg, batch.Kind[strictMember]{Name: "members", ChunkSize: 500, KeyName: "email",
			KeyFunc:   func(m strictMember) string { return strings.ToLower(m.Email) },
			Processor: batch.ProcessFunc[strictMember](func(_ context.Context, m strictMember) (string, error) { return d.call(m.Email) })})
	} else {
		err = batch.Register(reg, batch.Kind[member]{Name: "members", ChunkSize: 500, KeyName: "email",
			KeyFunc:   func(m member) string { return strings.ToLower(m.Email) },
			Processor: batch.ProcessFunc[member](func(_ context.Context, m member) (string, error) { return d.call(m.Email) })})
	}
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func work(t *testing.T, e *batch.Engine, id int64) {
	t.Helper()
	if _, err := e.Work(context.Background(), batch.WorkParams{BatchID: id, UntilDone: true, Workers: 2}); err != nil {
		t.Fatal(err)
	}
}

// TestRerunFromErrorReport: a 10,000-row batch with 1,000 invalid rows
// (999 bad amounts, one email that repeats a completed row's); 900 amounts
// are fixed in the error report, which is imported back as a re-run of its
// batch. 9,900 rows succeed, the first pass's 9,000 are never processed
// again (the downstream saw each email once), the totals equal the
// aggregate, and the duplicate stays invalid.
func TestRerunFromErrorReport(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		d := newDownstream()
		e := newEngine(t, bd.store, membersRegistry(t, d, false), 30*time.Second)
		var in strings.Builder
		in.WriteString("email,name,amount\n")
		for i := range 10_000 {
			email, amount := fmt.Sprintf("m%d@example.com", i), i%50
			switch {
			case i == 5000:
				email = "m10@example.com" // the same member as row 12
			case i%10 == 9 && i < 9990:
				amount = -5
			}
			fmt.Fprintf(&in, "%s,Member %d,%d\n", email, i, amount)
		}
		b, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "members.csv", Source: strings.NewReader(in.String())})
		if err != nil {
			t.Fatal(err)
		}
		if b.Counts[rows.StateInvalid] != 1000 {
			t.Fatalf("first pass: %v", b.Counts)
		}
		work(t, e, b.ID)

		var report bytes.Buffer
		if n, err := e.ErrorReport(ctx, batch.ErrorReportParams{BatchID: b.ID}, &report); err != nil || n != 1000 {
			t.Fatalf("report: %d rows, %v", n, err)
		}
		fixed := fixAmounts(t, report.String(), 900)
		res, err := e.Rerun(ctx, batch.RerunParams{BatchID: b.ID, Source: strings.NewReader(fixed), SourceName: "errors.csv", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if res.MatchedBy != "row" || res.Reparsed != 1000 || res.Valid != 900 || res.Invalid != 100 || res.Added != 0 {
			t.Fatalf("re-run: %+v", res)
		}
		work(t, e, b.ID)
		c := storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID)
		if c[rows.StateSucceeded] != 9900 || c[rows.StateInvalid] != 100 || c.Total() != 10_000 {
			t.Fatalf("after the re-run: %v", c)
		}
		for i := range 10_000 {
			if i == 5000 {
				continue
			}
			email := fmt.Sprintf("m%d@example.com", i)
			if n := d.count(email); (i%10 != 9 && n != 1) || n > 1 {
				t.Fatalf("%s was processed %d times", email, n)
			}
		}
		dup, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: batch.DefaultTenant, BatchID: b.ID, AfterRowNo: 5001, Limit: 1})
		if err != nil || dup[0].RowNo != 5002 || dup[0].State != rows.StateInvalid || dup[0].Errors[0].Code != rows.CodeDuplicateKey ||
			!strings.Contains(dup[0].Errors[0].Message, "row 12") {
			t.Fatalf("the duplicate after the re-run: %+v, %v", dup, err)
		}
		got, err := bd.store.BatchGet(ctx, driver.BatchGetParams{TenantID: batch.DefaultTenant, ID: b.ID})
		if err != nil || got.Status != batchtype.StatusFinished {
			t.Fatalf("batch: %+v, %v", got, err)
		}
		var counted int64
		for _, ec := range got.ErrorCounts {
			counted += ec.Count
		}
		if counted != 100 {
			t.Fatalf("error counts after the re-run: %+v", got.ErrorCounts)
		}
		h, err := e.History(ctx, batch.HistoryParams{BatchID: b.ID})
		if err != nil || len(h) != 1 || h[0].Action != "rerun" || h[0].Actor != "ann" {
			t.Fatalf("history: %+v, %v", h, err)
		}
	})
}

// fixAmounts sets the amount of the first n report rows whose amount is
// negative to 7.
func fixAmounts(t *testing.T, report string, n int) string {
	t.Helper()
	lines := strings.SplitAfter(report, "\n")
	for i, l := range lines {
		if n == 0 {
			break
		}
		// The report writes -5 as '-5 (formula protection).
		if strings.Contains(l, ",'-5,") {
			lines[i] = strings.Replace(l, ",'-5,", ",7,", 1)
			n--
		}
	}
	if n != 0 {
		t.Fatalf("%d amounts left to fix", n)
	}
	return strings.Join(lines, "")
}

// TestRerunUnderTightenedRules: a re-run without a file judges only the
// rows that are not protected by the kind's new rules; completed rows are
// kept although they would now fail, and are not processed again.
func TestRerunUnderTightenedRules(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		d := newDownstream()
		d.refuse["r3@x.io"] = true
		e := newEngine(t, bd.store, membersRegistry(t, d, false), 30*time.Second)
		src := "email,name,amount\nr1@x.io,A,5\nr2@x.io,B,500\nr3@x.io,C,600\nnot-an-email,D,700\nr5@x.io,E,50\n"
		b, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "m.csv", Source: strings.NewReader(src)})
		if err != nil {
			t.Fatal(err)
		}
		work(t, e, b.ID)
		// Rows 2, 3, 6 succeeded; 4 failed (refused); 5 invalid.
		delete(d.refuse, "r3@x.io")
		strict := newEngine(t, bd.store, membersRegistry(t, d, true), 30*time.Second)
		res, err := strict.Rerun(ctx, batch.RerunParams{BatchID: b.ID, Actor: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reparsed != 2 || res.Valid != 1 || res.Invalid != 1 {
			t.Fatalf("re-run: %+v", res)
		}
		work(t, strict, b.ID)
		c := storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID)
		if c[rows.StateSucceeded] != 4 || c[rows.StateInvalid] != 1 {
			t.Fatalf("after: %v", c)
		}
		for _, email := range []string{"r1@x.io", "r2@x.io", "r5@x.io"} {
			if n := d.count(email); n != 1 {
				t.Fatalf("%s processed %d times", email, n)
			}
		}
		if n := d.count("r3@x.io"); n != 2 {
			t.Fatalf("the failed row was processed %d times, want 2", n)
		}
	})
}

// TestRerunRefusesUnknownAndReopensCancelled: a batch with unknown rows
// says which and how to reconcile; a cancelled batch is reopened, its
// cancelled rows worked and its completed ones kept.
func TestRerunRefusesUnknownAndReopensCancelled(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		d := newDownstream()
		e := newEngine(t, bd.store, membersRegistry(t, d, false), 30*time.Second)
		var in strings.Builder
		in.WriteString("email,name,amount\n")
		for i := range 1500 {
			fmt.Fprintf(&in, "c%d@x.io,N,%d\n", i, i)
		}
		b, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "m.csv", Source: strings.NewReader(in.String())})
		if err != nil {
			t.Fatal(err)
		}
		// Work one chunk of three, then cancel.
		l, err := bd.store.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", BatchID: b.ID, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]driver.RowOutcome, len(l.Rows))
		for i, r := range l.Rows {
			out[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: "x"}
		}
		out[0].State, out[0].ResultID = rows.StateUnknown, ""
		if _, err := bd.store.ChunkFlush(ctx, driver.ChunkFlushParams{TenantID: batch.DefaultTenant, BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: out, Release: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Cancel(ctx, batch.DefaultTenant, b.ID); err != nil {
			t.Fatal(err)
		}
		_, err = e.Rerun(ctx, batch.RerunParams{BatchID: b.ID})
		if !errors.Is(err, batch.ErrBatchBusy) || !strings.Contains(err.Error(), fmt.Sprintf("rows %d)", l.Rows[0].RowNo)) || !strings.Contains(err.Error(), "reconcile them first") {
			t.Fatalf("re-run with an unknown row: %v", err)
		}
		if err := e.Settle(ctx, batch.SettleParams{TenantID: batch.DefaultTenant, BatchID: b.ID, RowNo: l.Rows[0].RowNo, State: rows.StateSucceeded, ResultID: "checked"}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Rerun(ctx, batch.RerunParams{BatchID: b.ID})
		if err != nil || res.Reparsed != 1000 || res.Batch.Status != batchtype.StatusRunning {
			t.Fatalf("re-run of the cancelled batch: %+v, %v", res, err)
		}
		work(t, e, b.ID)
		c := storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID)
		if c[rows.StateSucceeded] != 1500 {
			t.Fatalf("after: %v", c)
		}
		for i := range 1500 {
			if n := d.count(fmt.Sprintf("c%d@x.io", i)); n > 1 || (i >= 500 && n != 1) {
				t.Fatalf("c%d processed %d times", i, n)
			}
		}
	})
}

// TestRerunCorrectedFileByKey: a corrected whole file is matched by the
// natural key: completed rows are passed over, fixed ones replace theirs,
// a column the batch lacked is added, a new member is added as a row.
func TestRerunCorrectedFileByKey(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		d := newDownstream()
		e := newEngine(t, bd.store, membersRegistry(t, d, false), 30*time.Second)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "m.csv",
			Source: strings.NewReader("email,name,amount\na@x.io,A,1\nb@x.io,,2\nc@x.io,C,-1\n")})
		if err != nil {
			t.Fatal(err)
		}
		work(t, e, b.ID)
		fixed := "name,email,amount\nA2,a@x.io,1\nC,c@x.io,3\nB,b@x.io,2\nD,d@x.io,4\n"
		res, err := e.Rerun(ctx, batch.RerunParams{BatchID: b.ID, Source: strings.NewReader(fixed), SourceName: "fixed.csv"})
		if err != nil {
			t.Fatal(err)
		}
		if res.MatchedBy != "key" || res.Kept != 1 || res.Reparsed != 2 || res.Added != 1 || res.Valid != 3 {
			t.Fatalf("re-run: %+v", res)
		}
		work(t, e, b.ID)
		all, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: batch.DefaultTenant, BatchID: b.ID})
		if err != nil || len(all) != 4 {
			t.Fatalf("rows: %+v, %v", all, err)
		}
		want := map[int64][]string{2: {"a@x.io", "A", "1"}, 3: {"b@x.io", "B", "2"}, 4: {"c@x.io", "C", "3"}, 5: {"d@x.io", "D", "4"}}
		for _, r := range all {
			if r.State != rows.StateSucceeded || strings.Join(r.Values, ",") != strings.Join(want[r.RowNo], ",") {
				t.Fatalf("row %d: %+v", r.RowNo, r)
			}
		}
		if d.count("a@x.io") != 1 {
			t.Fatal("a completed row was processed again")
		}
	})
}

// TestEditAndSkip: an edit validates the row again through every phase
// and against the other rows' keys, makes it due and reviewed; a skip is
// kept; a re-run passes both over; the history says who did what.
func TestEditAndSkip(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		d := newDownstream()
		e := newEngine(t, bd.store, membersRegistry(t, d, false), 30*time.Second)
		b, err := e.Import(ctx, batch.ImportParams{Kind: "members", SourceName: "m.csv",
			Source: strings.NewReader("email,name,amount\na@x.io,A,1\nb@x.io,B,-2\nc@x.io,,3\nd@x.io,D,-4\n")})
		if err != nil {
			t.Fatal(err)
		}
		work(t, e, b.ID)
		if _, err := e.EditRow(ctx, batch.EditRowParams{BatchID: b.ID, RowNo: 2, Set: map[string]string{"name": "Z"}}); !errors.Is(err, batch.ErrRowLocked) {
			t.Fatalf("edit of a succeeded row: %v", err)
		}
		r, err := e.EditRow(ctx, batch.EditRowParams{BatchID: b.ID, RowNo: 3, Set: map[string]string{"amount": "5", "email": "A@x.io"}, Actor: "ann"})
		if err != nil || r.State != rows.StateInvalid || r.Errors[0].Code != rows.CodeDuplicateKey || !r.Reviewed {
			t.Fatalf("edit to a taken email: %+v, %v", r, err)
		}
		r, err = e.EditRow(ctx, batch.EditRowParams{BatchID: b.ID, RowNo: 3, Set: map[string]string{"email": "b@x.io"}, Actor: "ann"})
		if err != nil || r.State != rows.StateValid {
			t.Fatalf("edit: %+v, %v", r, err)
		}
		if _, err := e.EditRow(ctx, batch.EditRowParams{BatchID: b.ID, RowNo: 4, Set: map[string]string{"nope": "1"}}); err == nil || !strings.Contains(err.Error(), `no column "nope"`) {
			t.Fatalf("edit of an unknown column: %v", err)
		}
		if err := e.SkipRow(ctx, batch.SkipRowParams{BatchID: b.ID, RowNo: 5, Reason: "a test member", Actor: "bob"}); err != nil {
			t.Fatal(err)
		}
		work(t, e, b.ID)
		c := storetest.CheckInvariant(t, bd.store, batch.DefaultTenant, b.ID)
		if c[rows.StateSucceeded] != 2 || c[rows.StateSkipped] != 1 || c[rows.StateInvalid] != 1 {
			t.Fatalf("after review: %v", c)
		}
		res, err := e.Rerun(ctx, batch.RerunParams{BatchID: b.ID})
		if err != nil || res.Reparsed != 1 {
			t.Fatalf("re-run after review: %+v, %v", res, err)
		}
		h, err := e.History(ctx, batch.HistoryParams{BatchID: b.ID})
		if err != nil || len(h) != 4 || h[0].Action != "edit" || h[2].Action != "skip" || h[2].Actor != "bob" || h[3].Action != "rerun" {
			t.Fatalf("history: %+v, %v", h, err)
		}
		var detail struct {
			Changes map[string]struct{ Old, New string }
			From    rows.State
			To      rows.State
		}
		if err := json.Unmarshal(h[1].Detail, &detail); err != nil || detail.Changes["email"].Old != "A@x.io" ||
			detail.Changes["email"].New != "b@x.io" || detail.From != rows.StateInvalid || detail.To != rows.StateValid {
			t.Fatalf("edit detail: %s (%v)", h[1].Detail, err)
		}
	})
}
