// Package filestore keeps the files the service was given (uploads) and
// made (exports), content-addressed: a file's name is the hex SHA-256 of
// its bytes, the digest a batch records as its source_digest, so that a
// re-run or a download finds the very bytes the batch was made from, and
// the same file uploaded twice is kept once.
//
// A file is written to a temporary name in the same directory and renamed
// into place only once complete and hashed, so a reader never sees a
// partial file. Sweep removes files not written or read for the retention
// period.
package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotFound: no file with that digest is kept (never stored, or swept).
var ErrNotFound = errors.New("file not kept")

// ErrTooLarge: the file is larger than the limit it was written under.
var ErrTooLarge = errors.New("file too large")

// Store is a directory of content-addressed files.
type Store struct {
	dir string
}

// Open returns the store in dir, creating the directory.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("file store %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Info describes a stored file.
type Info struct {
	Digest string `json:"digest"` // hex SHA-256
	Size   int64  `json:"size"`
}

// Put streams r into the store, at most max bytes (0: no limit), and
// returns its digest. More than max bytes is ErrTooLarge and keeps nothing.
func (s *Store) Put(r io.Reader, max int64) (Info, error) {
	w, err := s.Create()
	if err != nil {
		return Info{}, err
	}
	defer w.Abort()
	src := r
	if max > 0 {
		src = io.LimitReader(r, max+1)
	}
	n, err := io.Copy(w, src)
	if err != nil {
		return Info{}, fmt.Errorf("store file: %w", err)
	}
	if max > 0 && n > max {
		return Info{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return w.Commit()
}

// Writer writes one file into the store.
type Writer struct {
	s    *Store
	f    *os.File
	h    hashWriter
	n    int64
	done bool
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

// Create starts a file; Commit keeps it, Abort drops it.
func (s *Store) Create() (*Writer, error) {
	f, err := os.CreateTemp(s.dir, ".part-*")
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	return &Writer{s: s, f: f, h: sha256.New()}, nil
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// Commit syncs the file and moves it to its digest's name. A file with
// the same digest already kept is kept once, its retention renewed.
func (w *Writer) Commit() (Info, error) {
	if w.done {
		return Info{}, errors.New("file store: writer already closed")
	}
	w.done = true
	info := Info{Digest: hex.EncodeToString(w.h.Sum(nil)), Size: w.n}
	tmp := w.f.Name()
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		os.Remove(tmp)
		return Info{}, fmt.Errorf("file store: %w", err)
	}
	if err := w.f.Close(); err != nil {
		os.Remove(tmp)
		return Info{}, fmt.Errorf("file store: %w", err)
	}
	dst := w.s.path(info.Digest)
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		os.Remove(tmp)
		return Info{}, fmt.Errorf("file store: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return Info{}, fmt.Errorf("file store: %w", err)
	}
	now := time.Now()
	_ = os.Chtimes(dst, now, now)
	return info, nil
}

// Abort drops an uncommitted file; after Commit it does nothing.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

// Open opens the file of a digest and renews its retention.
func (s *Store) Open(digest string) (*os.File, error) {
	if !validDigest(digest) {
		return nil, fmt.Errorf("file %q: %w", digest, ErrNotFound)
	}
	p := s.path(digest)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("file %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", digest, err)
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return f, nil
}

// Sweep removes the files not written or opened for longer than age, and
// temporary files a crash left, and returns how many it removed.
func (s *Store) Sweep(age time.Duration) (int, error) {
	cutoff := time.Now().Add(-age)
	n := 0
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		part := strings.HasPrefix(d.Name(), ".part-")
		if part && time.Since(info.ModTime()) < 24*time.Hour {
			return nil // may be being written
		}
		if part || info.ModTime().Before(cutoff) {
			if err := os.Remove(p); err == nil {
				n++
			}
		}
		return nil
	})
	return n, err
}

// path spreads files over 256 directories by their first two hex digits.
func (s *Store) path(digest string) string {
	return filepath.Join(s.dir, digest[:2], digest)
}

func validDigest(d string) bool {
	if len(d) != sha256.Size*2 {
		return false
	}
	for _, c := range d {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
