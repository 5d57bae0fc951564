package batch

import (
	"encoding/binary"
	"sync"

	"github.com/rowfate/rowfate/batch/driver"
)

// keyFilter is a Bloom filter over the natural-key digests of an import's
// valid rows, in file order. A row whose digest the filter has not seen
// cannot repeat an earlier row's key, so it may be worked while it is
// ingested; a row the filter may have seen (a true repeat, or a false
// alarm) is held back until the store's exact check, which looks only at
// those digests (driver.DuplicateKey.Screen), and the false alarms are
// worked after it, in the same transaction.
//
// Its size is fixed by the row count, 8 bits a row (1 MiB for a million
// rows, 5 MiB for five), where an exact set of digests takes about 50
// bytes a row: memory stays flat in the file's length. At 8 bits and 6
// probes about 4,000 keys in a million are false alarms (measured on
// generated keys), each a row read and written a second time; at 20 bits
// there were 4, for 2.5 times the memory. Its hashes are the digest's own
// bytes: a digest is already a uniform 128-bit hash, so its two halves
// give every probe by double hashing (Kirsch and Mitzenmacher) without
// hashing again. A blocked filter (every probe in one cache line) was
// measured too: 40% faster to add to, many more false alarms.
type keyFilter struct {
	bits []uint64
	m    uint64 // bits in the filter
}

// keyFilterBitsPerRow sizes the filter, and keyFilterProbes is how many
// of its bits a key sets (about 8 ln 2).
const (
	keyFilterBitsPerRow = 8
	keyFilterProbes     = 6
)

// newKeyFilter sizes a filter for about n keys; n may be an estimate (the
// first pass's row count), and more keys only raise the false positives.
func newKeyFilter(n int64) *keyFilter {
	words := (max(n, 64)*keyFilterBitsPerRow + 63) / 64
	return &keyFilter{bits: make([]uint64, words), m: uint64(words) * 64}
}

// add adds a digest and reports whether the filter may have held it
// before: false means it surely did not.
func (f *keyFilter) add(digest []byte) (maybeSeen bool) {
	var d [16]byte
	copy(d[:], digest)
	h1, h2 := binary.LittleEndian.Uint64(d[:8]), binary.LittleEndian.Uint64(d[8:])|1
	seen := true
	for i := uint64(0); i < keyFilterProbes; i++ {
		bit := (h1 + i*h2) % f.m
		w, mask := bit/64, uint64(1)<<(bit%64)
		if f.bits[w]&mask == 0 {
			seen = false
			f.bits[w] |= mask
		}
	}
	return seen
}

// keyScreen screens an import's key digests in file order (keyFilter):
// the rows that may repeat an earlier row's key are suspects, and their
// digests the only ones the store's duplicate check looks at.
type keyScreen struct {
	filter     *keyFilter
	mu         sync.Mutex // suspect is read by the inline work, in another goroutine
	suspect    map[int64]bool
	candidates [][]byte
}

// maxCandidates bounds the digests handed to the store: past it (a file
// with many repeated keys), the store checks every digest instead.
const maxCandidates = 100_000

// newKeyScreen returns the screen of a kind with a natural key (nil
// without one), sized for about n rows.
func newKeyScreen(keyed bool, n int64) *keyScreen {
	if !keyed {
		return nil
	}
	return &keyScreen{filter: newKeyFilter(n), suspect: map[int64]bool{}}
}

// add screens a valid row's digest (nil for an invalid row).
func (s *keyScreen) add(row int64, digest []byte) {
	if s == nil || digest == nil || !s.filter.add(digest) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suspect[row] = true
	if len(s.candidates) <= maxCandidates {
		s.candidates = append(s.candidates, digest)
	}
}

// duplicateKey adds the screen to the store's duplicate check.
func (s *keyScreen) duplicateKey(k driver.DuplicateKey) driver.DuplicateKey {
	if s != nil && k.Name != "" {
		k.Screen = s.result
	}
	return k
}

// result is what the screen found once every row is read: the digests
// the store must check, unless there are too many to hand over.
func (s *keyScreen) result() ([][]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.candidates) > maxCandidates {
		return nil, false
	}
	return s.candidates, true
}

// isSuspect reports whether a row's key may repeat an earlier row's.
func (s *keyScreen) isSuspect(row int64) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.suspect[row]
}
