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

// TestPutOpen: a file is kept under its tenant and SHA-256 and read back
// whole; the same bytes twice are kept once.
func TestPutOpen(t *testing.T) {
	t.Parallel()
	s := open(t)
	data := []byte("email,name\na@example.com,A\n")
	info, err := s.Put("acme", bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Digest != digest(data) || info.Size != int64(len(data)) {
		t.Fatalf("info = %+v", info)
	}
	again, err := s.Put("acme", bytes.NewReader(data), 0)
	if err != nil || again != info {
		t.Fatalf("second put = %+v, %v", again, err)
	}
	f, err := s.Open("acme", info.Digest)
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
	if _, err := s.Put("acme", strings.NewReader(strings.Repeat("x", 101)), 100); !errors.Is(err, filestore.ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := s.Put("acme", strings.NewReader(strings.Repeat("x", 100)), 100); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	filepath.WalkDir(s.Dir(), func(p string, d os.DirEntry, _ error) error {
		if strings.HasPrefix(d.Name(), ".part-") {
			t.Errorf("a refused file left %s", p)
		}
		return nil
	})
	if _, err := s.Put("", strings.NewReader("x"), 0); err == nil {
		t.Error("a file of no tenant was kept")
	}
	for _, d := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("0", 63), digest([]byte("never stored"))} {
		if _, err := s.Open("acme", d); !errors.Is(err, filestore.ErrNotFound) {
			t.Errorf("open %q: %v", d, err)
		}
	}
}

// TestAbortAndConcurrentPuts: an aborted writer leaves nothing; writers of
// the same bytes at once all succeed with one file.
func TestAbortAndConcurrentPuts(t *testing.T) {
	t.Parallel()
	s := open(t)
	w, err := s.Create("acme")
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
			info, err := s.Put("acme", bytes.NewReader(data), 0)
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
	old, _ := s.Put("acme", strings.NewReader("old"), 0)
	fresh, _ := s.Put("acme", strings.NewReader("fresh"), 0)
	oldID, err := s.NewUpload("acme", old.Digest, "old.csv")
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-48 * time.Hour)
	// Age the old file and its upload id: the only files named after
	// them.
	filepath.WalkDir(s.Dir(), func(p string, d os.DirEntry, _ error) error {
		if d.Name() == old.Digest || d.Name() == oldID {
			if err := os.Chtimes(p, past, past); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	part := filepath.Join(s.Dir(), ".part-crashed")
	os.WriteFile(part, []byte("x"), 0o600)
	os.Chtimes(part, past, past)
	n, err := s.Sweep(24 * time.Hour)
	if err != nil || n != 3 {
		t.Fatalf("sweep removed %d (%v), want 3", n, err)
	}
	if _, err := s.Open("acme", old.Digest); !errors.Is(err, filestore.ErrNotFound) {
		t.Errorf("old file: %v", err)
	}
	if _, _, err := s.OpenUpload("acme", oldID); !errors.Is(err, filestore.ErrNotFound) {
		t.Errorf("old upload: %v", err)
	}
	f, err := s.Open("acme", fresh.Digest)
	if err != nil {
		t.Fatalf("fresh file: %v", err)
	}
	f.Close()
}

// TestTenants: a tenant's files and upload ids are its own. Another
// tenant opens nothing by digest or by upload id, even when it keeps the
// same bytes itself, which are then its own file with its own ids.
func TestTenants(t *testing.T) {
	t.Parallel()
	s := open(t)
	data := []byte("email,name\nsecret@acme.example,A\n")
	info, err := s.Put("acme", bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.NewUpload("acme", info.Digest, "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, filestore.UploadPrefix) || strings.Contains(id, info.Digest[:8]) {
		t.Errorf("upload id %q: want an opaque %s id", id, filestore.UploadPrefix)
	}
	if again, _ := s.NewUpload("acme", info.Digest, "c.csv"); again == id {
		t.Errorf("two uploads of the same file have the same id %q", id)
	}
	f, got, err := s.OpenUpload("acme", id)
	if want := (filestore.Info{Digest: info.Digest, Size: info.Size, Name: "c.csv"}); err != nil || got != want {
		t.Fatalf("acme opens its upload: %+v, %v; want %+v (with the name it was sent under)", got, err, want)
	}
	f.Close()
	for _, tenant := range []string{"globex", "ACME", "acme ", "../acme"} {
		if _, err := s.Open(tenant, info.Digest); !errors.Is(err, filestore.ErrNotFound) {
			t.Errorf("%q opens acme's file by its digest: %v", tenant, err)
		}
		if _, _, err := s.OpenUpload(tenant, id); !errors.Is(err, filestore.ErrNotFound) {
			t.Errorf("%q opens acme's upload: %v", tenant, err)
		}
	}
	for _, bad := range []string{"", info.Digest, "upl_", id + "x", "upl_../../../../etc/passwd", filestore.UploadPrefix + strings.Repeat("A", 22)} {
		if _, _, err := s.OpenUpload("acme", bad); !errors.Is(err, filestore.ErrNotFound) {
			t.Errorf("upload id %q: %v", bad, err)
		}
	}
	// globex keeps the same bytes: its own file, its own id.
	if _, err := s.Put("globex", bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	gid, err := s.NewUpload("globex", info.Digest, "g.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.OpenUpload("acme", gid); !errors.Is(err, filestore.ErrNotFound) {
		t.Errorf("acme opens globex's upload: %v", err)
	}
	f, err = s.Open("globex", info.Digest)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
