package batch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/storetest"
)

// tierEngine is an engine with the customers kind and its tier
// recalculation.
func tierEngine(t *testing.T, bd *bundle) *batch.Engine {
	t.Helper()
	reg := customersRegistry(t, bd)
	if err := batch.RegisterRecalc(reg, customers.TierKind(bd.db, bd.dialect)); err != nil {
		t.Fatal(err)
	}
	return newEngine(t, bd.store, reg, 30*time.Second)
}

// seedCustomers imports and works n customers of a tenant, amounts i%2000.
func seedCustomers(t *testing.T, e *batch.Engine, tenant string, n int) {
	t.Helper()
	var in strings.Builder
	in.WriteString("email,name,country,signup_date,amount\n")
	for i := range n {
		country := "FR"
		if i%3 == 0 {
			country = "DE"
		}
		fmt.Fprintf(&in, "c%d@example.com,C %d,%s,2021-03-04,%d\n", i, i, country, i%2000)
	}
	b := importCSV(t, e, tenant, in.String())
	if _, err := e.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{tenant}, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
}

// tiers reads every customer's tier and tier_runs of a tenant.
func tiers(t *testing.T, bd *bundle, tenant string) map[string][2]string {
	t.Helper()
	rs, err := bd.db.Query(`SELECT email, COALESCE(tier, ''), tier_runs, COALESCE(CAST(amount AS TEXT), '') FROM customers WHERE tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string][2]string{}
	for rs.Next() {
		var email, tier, amount string
		var runs int
		if err := rs.Scan(&email, &tier, &runs, &amount); err != nil {
			t.Fatal(err)
		}
		out[email] = [2]string{tier, fmt.Sprint(runs)}
	}
	return out
}

// TestRecalcCancelledAndRerun: a tier recalculation over a tenant's
// customers, cancelled half-way and re-run, recalculates every customer
// exactly once (tier_runs counts the writes), and no other tenant's.
// 5,000 customers; 20,000 in make test-long.
func TestRecalcCancelledAndRerun(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := tierEngine(t, bd)
		n := testenv.Pick[int64](5_000, 20_000)
		seedCustomers(t, e, "acme", int(n))
		seedCustomers(t, e, "globex", 10)
		b, err := e.Recalc(ctx, batch.RecalcParams{TenantID: "acme", Kind: customers.TierName})
		if err != nil {
			t.Fatal(err)
		}
		if b.Counts[rows.StateValid] != n || b.Recalc == nil || b.Kind != customers.TierName || len(b.Header) != 2 {
			t.Fatalf("recalculation batch: %+v", b)
		}
		done := make(chan error, 1)
		go func() {
			_, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{"acme"}, Workers: 1, UntilDone: true})
			done <- err
		}()
		for {
			got, err := bd.store.BatchGet(ctx, driver.BatchGetParams{TenantID: "acme", ID: b.ID})
			if err != nil {
				t.Fatal(err)
			}
			if got.Counts[rows.StateSucceeded] >= 1000 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if _, err := e.Cancel(ctx, "acme", b.ID); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mid := storetest.CheckInvariant(t, bd.store, "acme", b.ID)
		if mid[rows.StateCancelled] == 0 || mid[rows.StateSucceeded]+mid[rows.StateCancelled] != n {
			t.Fatalf("after the cancel: %v", mid)
		}
		res, err := e.Rerun(ctx, batch.RerunParams{TenantID: "acme", BatchID: b.ID})
		if err != nil || res.Reparsed != mid[rows.StateCancelled] {
			t.Fatalf("re-run: %+v, %v", res, err)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, TenantIDs: []string{"acme"}, Workers: 2, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		if fin := storetest.CheckInvariant(t, bd.store, "acme", b.ID); fin[rows.StateSucceeded] != n {
			t.Fatalf("after the re-run: %v", fin)
		}
		got := tiers(t, bd, "acme")
		for i := range n {
			want := customers.Tier(rows.Some(rows.NewDecimal(int64(i%2000), 0)))
			if c := got[fmt.Sprintf("c%d@example.com", i)]; c != [2]string{want, "1"} {
				t.Fatalf("customer %d: tier and runs %v, want %s once", i, c, want)
			}
		}
		for email, c := range tiers(t, bd, "globex") {
			if c != [2]string{"", "0"} {
				t.Fatalf("another tenant's customer %s was recalculated: %v", email, c)
			}
		}
		t.Logf("cancelled after %d of %d, re-run parsed %d again", mid[rows.StateSucceeded], n, res.Reparsed)
	})
}

// TestRecalcWhere: a filter keeps its customers only; a filter that does
// not parse is ErrBadParams before anything is read.
func TestRecalcWhere(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := tierEngine(t, bd)
		seedCustomers(t, e, "acme", 30)
		b, err := e.Recalc(ctx, batch.RecalcParams{TenantID: "acme", Kind: customers.TierName, Params: map[string]string{"where": "country=DE and amount>=10"}})
		if err != nil {
			t.Fatal(err)
		}
		// DE is every third customer (0, 3, ... 27), amount i: 12..27 → 6.
		if b.Counts.Total() != 6 || b.Recalc["where"] != "country=DE and amount>=10" || !strings.Contains(b.SourceName, "where=country=DE") {
			t.Fatalf("filtered recalculation: %+v", b)
		}
		for _, bad := range []string{"name=Ann", "amount>=lots", "country>DE", "1=1; DROP TABLE customers"} {
			_, err := e.Recalc(ctx, batch.RecalcParams{TenantID: "acme", Kind: customers.TierName, Params: map[string]string{"where": bad}})
			if !errors.Is(err, batch.ErrBadParams) {
				t.Fatalf("where %q: %v, want ErrBadParams", bad, err)
			}
		}
		if _, err := e.Import(ctx, batch.ImportParams{Kind: customers.TierName, SourceName: "x.csv", Source: strings.NewReader("email,amount\na@x.io,1\n")}); err == nil {
			t.Fatal("a file was imported as a recalculation")
		}
	})
}
