// Package filestore keeps the files the service was given (uploads) and
// made (exports), each under the tenant it belongs to. Within a tenant a
// file is content-addressed: its name is the hex SHA-256 of its bytes,
// the digest a batch records as its source_digest, so that a re-run or a
// download finds the very bytes the batch was made from, and the same
// file sent twice by a tenant is kept once.
//
// A digest identifies content; it is never a way in. Files are looked up
// only under the tenant that asks, so a digest learnt elsewhere (it is
// in every batch's JSON and in download ETags) opens nothing of another
// tenant's, and the same bytes sent by two tenants are two files. What
// the service hands a client to name a kept file (a preview's upload) is
// an upload id: random, opaque, and itself kept under its tenant.
//
// A file is written to a temporary name in its tenant's directory and
// renamed into place only once complete and hashed, so a reader never
// sees a partial file. Sweep removes files and upload ids not written or
// read for the retention period.
package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
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

// ErrNotFound: no file with that digest, or no upload with that id, is
// kept for the tenant (never stored, stored for another tenant, or
// swept).
var ErrNotFound = errors.New("file not kept")

// ErrTooLarge: the file is larger than the limit it was written under.
var ErrTooLarge = errors.New("file too large")

// UploadPrefix starts every upload id.
const UploadPrefix = "upl_"

// uploadIDBytes is the randomness of an upload id: 128 bits, so that an
// id is never guessed.
const uploadIDBytes = 16

// Store is a directory of files kept per tenant.
//
// The layout is tenants/<tenant key>/<first two hex digits>/<digest> for
// the files and tenants/<tenant key>/uploads/<upload id> for the upload
// ids (each holds its file's digest, then the name the client sent it
// under: the same bytes may come under many names, so a name belongs to
// an upload, not to the content). The tenant key is the hex SHA-256
// of the tenant id: any tenant id makes a safe, fixed-length directory
// name, and no id can name another's directory.
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
	// Name is the file's name as the client sent it, kept with an upload
	// id (OpenUpload); "" for a file opened by its digest, and for an
	// upload id kept before names were.
	Name string `json:"name,omitempty"`
}

// Put streams r into the tenant's files, at most max bytes (0: no
// limit), and returns its digest. More than max bytes is ErrTooLarge and
// keeps nothing.
func (s *Store) Put(tenant string, r io.Reader, max int64) (Info, error) {
	w, err := s.Create(tenant)
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
	dir  string // the tenant's directory
	f    *os.File
	h    hashWriter
	n    int64
	done bool
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

// Create starts a file of the tenant's; Commit keeps it, Abort drops it.
func (s *Store) Create(tenant string) (*Writer, error) {
	dir, err := s.tenantDir(tenant)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	f, err := os.CreateTemp(dir, ".part-*")
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	return &Writer{dir: dir, f: f, h: sha256.New()}, nil
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// Commit syncs the file and moves it to its digest's name. A file with
// the same digest already kept for the tenant is kept once, its
// retention renewed.
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
	dst := filePath(w.dir, info.Digest)
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		os.Remove(tmp)
		return Info{}, fmt.Errorf("file store: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return Info{}, fmt.Errorf("file store: %w", err)
	}
	touch(dst)
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

// Open opens the tenant's file of a digest and renews its retention. A
// file kept for another tenant is ErrNotFound, as one never kept is.
func (s *Store) Open(tenant, digest string) (*os.File, error) {
	if !validDigest(digest) {
		return nil, fmt.Errorf("file %q: %w", digest, ErrNotFound)
	}
	dir, err := s.tenantDir(tenant)
	if err != nil {
		return nil, err
	}
	p := filePath(dir, digest)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("file %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", digest, err)
	}
	touch(p)
	return f, nil
}

// NewUpload returns a new upload id for the tenant's file of a digest:
// the name a client is given for the file and gives back to use it. It
// is random, says nothing of the content, and names the file for this
// tenant only. name is the file's name as the client sent it, which
// OpenUpload returns, so that what is made from the upload later (an
// import) is named after the client's file.
func (s *Store) NewUpload(tenant, digest, name string) (string, error) {
	if !validDigest(digest) {
		return "", fmt.Errorf("file store: %q is not a digest", digest)
	}
	dir, err := s.tenantDir(tenant)
	if err != nil {
		return "", err
	}
	var b [uploadIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("file store: %w", err)
	}
	id := UploadPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Join(dir, "uploads"), 0o750); err != nil {
		return "", fmt.Errorf("file store: %w", err)
	}
	// A small file, written whole: an id is never half there.
	tmp, err := os.CreateTemp(dir, ".part-*")
	if err != nil {
		return "", fmt.Errorf("file store: %w", err)
	}
	_, werr := tmp.WriteString(digest + "\n" + name)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, "uploads", id))
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("file store: %w", werr)
	}
	return id, nil
}

// OpenUpload opens the file of one of the tenant's upload ids and renews
// the retention of both. An id of another tenant's, a malformed one and
// one whose file was swept are all ErrNotFound.
func (s *Store) OpenUpload(tenant, id string) (*os.File, Info, error) {
	if !validUploadID(id) {
		return nil, Info{}, fmt.Errorf("upload %q: %w", id, ErrNotFound)
	}
	dir, err := s.tenantDir(tenant)
	if err != nil {
		return nil, Info{}, err
	}
	ref := filepath.Join(dir, "uploads", id)
	b, err := os.ReadFile(ref)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, fmt.Errorf("upload %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("upload %s: %w", id, err)
	}
	digest, name, _ := strings.Cut(string(b), "\n")
	digest = strings.TrimSpace(digest)
	f, err := s.Open(tenant, digest)
	if err != nil {
		return nil, Info{}, fmt.Errorf("upload %s: %w", id, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("upload %s: %w", id, err)
	}
	touch(ref)
	return f, Info{Digest: digest, Size: st.Size(), Name: name}, nil
}

// Sweep removes the files and upload ids not written or opened for
// longer than age, and temporary files a crash left, and returns how
// many it removed.
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

// tenantDir is the directory of a tenant's files.
func (s *Store) tenantDir(tenant string) (string, error) {
	if tenant == "" {
		return "", errors.New("file store: a kept file belongs to a tenant; none given")
	}
	sum := sha256.Sum256([]byte(tenant))
	return filepath.Join(s.dir, "tenants", hex.EncodeToString(sum[:])), nil
}

// filePath spreads a tenant's files over 256 directories by their first
// two hex digits.
func filePath(dir, digest string) string {
	return filepath.Join(dir, digest[:2], digest)
}

// touch renews a kept file's retention.
func touch(p string) {
	now := time.Now()
	_ = os.Chtimes(p, now, now)
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

func validUploadID(id string) bool {
	rest, ok := strings.CutPrefix(id, UploadPrefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(uploadIDBytes) {
		return false
	}
	for _, c := range rest {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
