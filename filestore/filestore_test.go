package filestore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/filestore"
)

func open(t *testing.T) *filestore.Store {
	t.Helper()
	s, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestPutOpen: a file is kept under its SHA-256 and read back whole; the
// same bytes twice are kept once.
func TestPutOpen(t *testing.T) {
	t.Parallel()
	s := open(t)
	data := []byte("email,name\na@example.com,A\n")
	info, err := s.Put(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Digest != digest(data) || info.Size != int64(len(data)) {
		t.Fatalf("info = %+v", info)
	}
	again, err := s.Put(bytes.NewReader(data), 0)
	if err != nil || again != info {
		t.Fatalf("second put = %+v, %v", again, err)
	}
	f, err := s.Open(info.Digest)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %q", got)
	}
	var files int
	filepath.WalkDir(s.Dir(), func(_ string, d os.DirEntry, _ error) error {
		if !d.IsDir() {
			files++
		}
		return nil
	})
	if files != 1 {
		t.Errorf("%d files kept, want 1", files)
	}
}

// TestLimits: more than the limit keeps nothing; a digest that is not one
// (a path, say) is not found.
func TestLimits(t *testing.T) {
	t.Parallel()
	s := open(t)
	if _, err := s.Put(strings.NewReader(strings.Repeat("x", 101)), 100); !errors.Is(err, filestore.ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := s.Put(strings.NewReader(strings.Repeat("x", 100)), 100); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	entries, _ := os.ReadDir(s.Dir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".part-") {
			t.Errorf("a refused file left %s", e.Name())
		}
	}
	for _, d := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("0", 63), digest([]byte("never stored"))} {
		if _, err := s.Open(d); !errors.Is(err, filestore.ErrNotFound) {
			t.Errorf("open %q: %v", d, err)
		}
	}
}

// TestAbortAndConcurrentPuts: an aborted writer leaves nothing; writers of
// the same bytes at once all succeed with one file.
func TestAbortAndConcurrentPuts(t *testing.T) {
	t.Parallel()
	s := open(t)
	w, err := s.Create()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("half"))
	w.Abort()
	if _, err := w.Commit(); err == nil {
		t.Error("commit after abort succeeded")
	}
	data := bytes.Repeat([]byte("row\n"), 10_000)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := s.Put(bytes.NewReader(data), 0)
			if err == nil && info.Digest != digest(data) {
				err = errors.New("wrong digest")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestSweep: files unused past the retention go; files used recently
// stay; a crash's old partial files go.
func TestSweep(t *testing.T) {
	t.Parallel()
	s := open(t)
	old, _ := s.Put(strings.NewReader("old"), 0)
	fresh, _ := s.Put(strings.NewReader("fresh"), 0)
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(s.Dir(), old.Digest[:2], old.Digest), past, past); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(s.Dir(), ".part-crashed")
	os.WriteFile(part, []byte("x"), 0o600)
	os.Chtimes(part, past, past)
	n, err := s.Sweep(24 * time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("sweep removed %d (%v), want 2", n, err)
	}
	if _, err := s.Open(old.Digest); !errors.Is(err, filestore.ErrNotFound) {
		t.Errorf("old file: %v", err)
	}
	f, err := s.Open(fresh.Digest)
	if err != nil {
		t.Fatalf("fresh file: %v", err)
	}
	f.Close()
}
