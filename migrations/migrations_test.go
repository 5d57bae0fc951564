package migrations

import (
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	for _, e := range []Engine{Postgres, SQLite} {
		ms, err := Load(e)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if len(ms) == 0 || ms[0].Version != 1 || ms[0].Name != "init" || !strings.Contains(ms[0].SQL, "CREATE TABLE batch_rows") {
			t.Fatalf("%s: migrations = %+v", e, ms)
		}
		for i := 1; i < len(ms); i++ {
			if ms[i].Version <= ms[i-1].Version {
				t.Fatalf("%s: versions out of order", e)
			}
		}
	}
	pg, _ := Load(Postgres)
	lite, _ := Load(SQLite)
	if len(pg) != len(lite) {
		t.Fatalf("engines disagree: %d postgres steps, %d sqlite steps", len(pg), len(lite))
	}
}

func TestPending(t *testing.T) {
	t.Parallel()
	all := []Migration{{Version: 1}, {Version: 2}, {Version: 3}}
	got := Pending(all, map[int]bool{1: true, 3: true})
	if len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("pending = %+v", got)
	}
	if len(Pending(all, nil)) != 3 {
		t.Fatal("nil applied must mean all pending")
	}
}
