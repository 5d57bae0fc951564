package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
)

// testKindDefinitions: definitions are versioned; the current one is the newest
// unless removed; a removed kind comes back as a new version; old
// versions stay readable.
func testKindDefinitions(t *testing.T, s driver.Store) {
	ctx := context.Background()
	ks, ok := s.(driver.KindStore)
	if !ok {
		t.Fatalf("%T does not implement driver.KindStore", s)
	}
	if _, err := ks.KindGet(ctx, "orders", 0); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("get of no kind = %v", err)
	}
	v1, err := ks.KindPut(ctx, driver.KindPutParams{Name: "orders", Definition: `{"v":1}`})
	if err != nil || v1.Version != 1 || v1.Format != "tableschema" {
		t.Fatalf("put = %+v, %v", v1, err)
	}
	v2, err := ks.KindPut(ctx, driver.KindPutParams{Name: "orders", Definition: `{"v":2}`})
	if err != nil || v2.Version != 2 {
		t.Fatalf("second put = %+v, %v", v2, err)
	}
	if _, err := ks.KindPut(ctx, driver.KindPutParams{Name: "events", Definition: `{}`}); err != nil {
		t.Fatal(err)
	}
	cur, err := ks.KindGet(ctx, "orders", 0)
	if err != nil || cur.Version != 2 || cur.Definition != `{"v":2}` {
		t.Fatalf("current = %+v, %v", cur, err)
	}
	old, err := ks.KindGet(ctx, "orders", 1)
	if err != nil || old.Definition != `{"v":1}` {
		t.Fatalf("version 1 = %+v, %v", old, err)
	}
	list, err := ks.KindList(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "events" || list[1].Version != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := ks.KindRemove(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := ks.KindRemove(ctx, "orders"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("second remove = %v", err)
	}
	if _, err := ks.KindGet(ctx, "orders", 0); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("current of a removed kind = %v", err)
	}
	if k, err := ks.KindGet(ctx, "orders", 2); err != nil || k.RemovedAt == nil {
		t.Fatalf("the removed version = %+v, %v", k, err)
	}
	if list, _ := ks.KindList(ctx); len(list) != 1 {
		t.Fatalf("list after remove = %+v", list)
	}
	v3, err := ks.KindPut(ctx, driver.KindPutParams{Name: "orders", Definition: `{"v":3}`})
	if err != nil || v3.Version != 3 {
		t.Fatalf("put after remove = %+v, %v", v3, err)
	}
}
