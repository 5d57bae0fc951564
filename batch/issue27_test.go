package batch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// TestIdempotencyKeyWithOtherOptions: a caller's idempotency key used
// again with the same file and other options (another date order) is
// refused, as with other content; with the same options it brings the
// batch back (issue 27, item 4).
func TestIdempotencyKeyWithOtherOptions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		e := customersEngine(t, bd)
		ctx := context.Background()
		file := "email,name,country,signup_date,amount\nk1@example.com,Ann,FR,01/02/2025,1\n"
		// imp imports the file under key and says whether it was the
		// batch of an earlier import.
		imp := func(key string, order rows.DateOrder) (reused bool, err error) {
			b, err := e.Import(ctx, batch.ImportParams{Kind: "customers", SourceName: "k.csv", Source: strings.NewReader(file), IdempotencyKey: key,
				Conventions: rows.Conventions{DateOrder: order}})
			return err == nil && b.Reused, err
		}
		if reused, err := imp("k-1", rows.DMY); err != nil || reused {
			t.Fatalf("first import: %v", err)
		}
		if reused, err := imp("k-1", rows.DMY); err != nil || !reused {
			t.Fatalf("the same key, file and options: %v, want the batch back", err)
		}
		if _, err := imp("k-1", rows.MDY); !errors.Is(err, batch.ErrKeyReused) {
			t.Fatalf("the same key and file with another date order: %v, want ErrKeyReused", err)
		}
		if _, err := imp("k-1", rows.DateOrderUnknown); !errors.Is(err, batch.ErrKeyReused) {
			t.Fatalf("the same key and file without the options: %v, want ErrKeyReused", err)
		}
		// A key first used without options.
		if reused, err := imp("k-2", rows.DateOrderUnknown); err != nil || reused {
			t.Fatalf("first import of k-2: %v", err)
		}
		if _, err := imp("k-2", rows.DMY); !errors.Is(err, batch.ErrKeyReused) {
			t.Fatalf("k-2 with a date order: %v, want ErrKeyReused", err)
		}
	})
}
